// Regression for issue 33: under Wine (and Windows stacks without TCP_KEEPCNT) every request of the node's own
// HTTP client failed with `connect UNKNOWN`, because the client asked for TCP keep-alive while the socket was
// still connecting: libuv on Windows applies a keep-alive asked for before the connect as it creates the
// socket, and a refused keep-alive option fails the connect itself. The fake socket below behaves like that
// stack, on any platform: keep-alive asked for while connecting fails the connect; asked for once connected, it
// is refused quietly (setsockopt's error is not surfaced by net.Socket#setKeepAlive).
import { systemClock } from '@iop/clock';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';

import { createNodeHttpClient, type NodeHttpClient, type SocketConnector } from './node-http-client.js';

/** A TCP socket with the keep-alive behaviour of libuv on Wine 8 (`uv_tcp_keepalive` failing with UNKNOWN). */
class WineLikeSocket extends net.Socket {
  /** Keep-alive requests made once connected: [enable, initial delay]. */
  readonly keepAliveCalls: [boolean | undefined, number | undefined][] = [];
  private keepAliveWhileConnecting = false;
  private target = '';

  open(options: net.TcpNetConnectOpts): this {
    this.target = `${options.host ?? 'localhost'}:${options.port}`;
    return this.connect(options);
  }

  override setKeepAlive(enable?: boolean, initialDelay?: number): this {
    if (this.connecting) this.keepAliveWhileConnecting = true;
    else this.keepAliveCalls.push([enable, initialDelay]);
    return this;
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'connect' && this.keepAliveWhileConnecting) {
      const error: NodeJS.ErrnoException = new Error(`connect UNKNOWN ${this.target}`);
      error.code = 'UNKNOWN';
      error.errno = -4094;
      error.syscall = 'connect';
      this.destroy(error);
      return false;
    }
    return super.emit(event, ...args);
  }
}

function wineConnector(): SocketConnector & { sockets: WineLikeSocket[] } {
  const sockets: WineLikeSocket[] = [];
  return {
    sockets,
    tcp(options) {
      const socket = new WineLikeSocket().open(options);
      sockets.push(socket);
      return socket;
    },
    tls() {
      throw new Error('not used: plain http only');
    },
  };
}

let server: http.Server | undefined;
let client: NodeHttpClient | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  const current = server;
  server = undefined;
  if (current) {
    current.closeAllConnections();
    await new Promise<void>((resolve) => current.close(() => resolve()));
  }
});

async function startServer(): Promise<string> {
  const started = http.createServer((_request, response) => response.end('{"models":[]}'));
  server = started;
  await new Promise<void>((resolve) => started.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(started.address() as AddressInfo).port}`;
}

describe('createNodeHttpClient on a Windows-like socket stack', () => {
  it('the fake reproduces the failure: keep-alive asked for while connecting fails the connect', async () => {
    const url = new URL(await startServer());
    const socket = new WineLikeSocket().open({ host: url.hostname, port: Number(url.port) });
    socket.setKeepAlive(true, 1000);
    const error = await new Promise<unknown>((resolve) => {
      socket.once('error', resolve);
      socket.once('connect', () => resolve(undefined));
    });
    expect(error).toMatchObject({ code: 'UNKNOWN', syscall: 'connect' });
  });

  it('answers requests, turning TCP keep-alive on only once each socket is connected', async () => {
    const url = await startServer();
    const connector = wineConnector();
    client = createNodeHttpClient({ clock: systemClock, connector });
    for (let index = 0; index < 3; index += 1) {
      const response = await client.request(`${url}/api/tags`, {
        method: 'GET',
        headers: {},
        signal: new AbortController().signal,
      });
      expect(response.status).toBe(200);
      let body = '';
      for await (const chunk of response.body) body += Buffer.from(chunk).toString('utf8');
      expect(body).toBe('{"models":[]}');
    }
    // One pooled connection carried the three requests; keep-alive was asked for once, after the connect.
    expect(client.connectionsOpened).toBe(1);
    expect(connector.sockets.map((socket) => socket.keepAliveCalls)).toEqual([[[true, 1000]]]);
  });
});
