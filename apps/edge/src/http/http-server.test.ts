import net from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { listenHttp, type HttpListener } from './listen-http.js';
import { DEFAULT_HTTP_SERVER_LIMITS, MAX_HTTP_BODY_BYTES } from './http-server.js';
import { DEFAULT_MAX_FRAME_BYTES } from '@iop/wire';

let listener: HttpListener | undefined;

afterEach(async () => {
  await listener?.close();
  listener = undefined;
});

function connect(address: string): Promise<net.Socket> {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

function closedWithin(socket: net.Socket, ms: number): Promise<{ closed: boolean; data: string }> {
  return new Promise((resolve) => {
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => resolve({ closed: false, data }), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, data });
    });
  });
}

const ok = (_request: unknown, response: { end(body: string): void }) => response.end('ok');

describe('HTTP server limits', () => {
  it('closes a slowloris connection whose headers never finish (header timeout)', async () => {
    listener = await listenHttp('127.0.0.1:0', ok, { headersTimeoutMs: 300, checkIntervalMs: 50 });
    const socket = await connect(listener.address);
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n');
    const drip = setInterval(() => socket.write('x-drip: 1\r\n'), 50);
    const result = await closedWithin(socket, 3000);
    clearInterval(drip);
    socket.destroy();
    expect(result.closed).toBe(true);
    expect(result.data).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    listener = await listenHttp('127.0.0.1:0', ok, { keepAliveTimeoutMs: 200 });
    const socket = await connect(listener.address);
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    const result = await closedWithin(socket, 3000);
    socket.destroy();
    expect(result.data).toContain('ok');
    expect(result.closed).toBe(true);
  });

  it('refuses connections above maxConnections and serves again once one closes', async () => {
    listener = await listenHttp('127.0.0.1:0', ok, { maxConnections: 2 });
    const first = await connect(listener.address);
    const second = await connect(listener.address);
    const third = await connect(listener.address);
    const refused = await closedWithin(third, 2000);
    expect(refused.closed).toBe(true);
    first.destroy();
    second.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const response = await fetch(`http://${listener.address}/`);
    expect(await response.text()).toBe('ok');
  });

  it('has bounded defaults and a body limit one frame can carry', () => {
    expect(DEFAULT_HTTP_SERVER_LIMITS.headersTimeoutMs).toBeLessThanOrEqual(10_000);
    expect(DEFAULT_HTTP_SERVER_LIMITS.maxConnections).toBeGreaterThan(0);
    expect(MAX_HTTP_BODY_BYTES).toBeLessThan(DEFAULT_MAX_FRAME_BYTES);
  });
});
