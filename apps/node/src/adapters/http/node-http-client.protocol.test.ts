// The HTTP/1.1 client against real servers: node:http ones for well-formed traffic, raw net ones for framing
// edge cases and bad input, and a TLS server with a self-signed certificate generated for the test.
import { ManualClock, systemClock } from '@iop/clock';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { requireTool } from '@iop/testkit';

import type { HttpClientResponse } from './http-client.js';
import { createNodeHttpClient, type NodeHttpClient } from './node-http-client.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check` holds (polling), failing after `ms`. */
async function until(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

interface TestServer {
  url: string;
  /** Connections accepted so far, and how many of them are closed. */
  connections: number;
  closed: number;
  close(): Promise<void>;
}

function track(server: net.Server, result: TestServer): void {
  server.on('connection', (socket: net.Socket) => {
    result.connections += 1;
    socket.on('close', () => (result.closed += 1));
  });
}

async function listen(server: net.Server, scheme: string, host = '127.0.0.1'): Promise<TestServer> {
  const result: TestServer = {
    url: '',
    connections: 0,
    closed: 0,
    close: () =>
      new Promise<void>((resolve) => {
        if (server instanceof http.Server) server.closeAllConnections();
        else for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  track(server, result);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  result.url = `${scheme}://${host}:${(server.address() as AddressInfo).port}`;
  return result;
}

function httpServer(handler: http.RequestListener): Promise<TestServer> {
  return listen(http.createServer(handler), 'http');
}

/**
 * A raw server: `onRequest(socket, head, index)` for each request head read on a connection (requests here have
 * no body), `index` counting the requests on that connection.
 */
function rawServer(
  onRequest: (socket: net.Socket, head: string, index: number) => void,
): Promise<TestServer> {
  const server = net.createServer((socket) => {
    let pending = '';
    let index = 0;
    socket.on('error', () => undefined);
    socket.on('data', (data: Buffer) => {
      pending += data.toString('latin1');
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        onRequest(socket, head, index);
        index += 1;
      }
    });
  });
  return listen(server, 'http');
}

const get = (client: NodeHttpClient, url: string, signal = new AbortController().signal) =>
  client.request(url, { method: 'GET', headers: {}, signal });

async function text(response: HttpClientResponse): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of response.body) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts).toString('utf8');
}

let client: NodeHttpClient;
let server: TestServer | undefined;
afterEach(async () => {
  client?.close();
  await server?.close();
  server = undefined;
});

describe('createNodeHttpClient response framing', () => {
  it('reads a content-length body and the response headers', async () => {
    server = await httpServer((_request, response) => {
      response.setHeader('x-multi', ['a', 'b']);
      response.setHeader('content-type', 'text/plain');
      response.statusMessage = 'Fine';
      response.end('hello');
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, `${server.url}/x?y=1`);
    expect(response.status).toBe(200);
    expect(response.statusText).toBe('Fine');
    expect(response.header('Content-Type')).toBe('text/plain');
    expect(response.header('x-multi')).toBe('a, b');
    expect(response.header('content-length')).toBe('5');
    expect(response.header('missing')).toBeUndefined();
    expect(await text(response)).toBe('hello');
  });

  it('reads a chunked body (several chunks, extensions, trailers) and reuses the connection', async () => {
    server = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel');
      setTimeout(() => socket.write('lo\r\n6\r\n wor'), 10);
      setTimeout(() => socket.write('ld\r\n0\r\nX-Trailer: t\r'), 20);
      setTimeout(() => socket.write('\n\r\n'), 30);
    });
    client = createNodeHttpClient({ clock: systemClock });
    const first = await get(client, server.url);
    expect(await text(first)).toBe('hello world');
    const second = await get(client, server.url);
    expect(await text(second)).toBe('hello world');
    expect(client.connectionsOpened).toBe(1);
  });

  it('reads a node:http chunked stream with trailers', async () => {
    server = await httpServer((_request, response) => {
      response.setHeader('trailer', 'x-done');
      response.write('a');
      setTimeout(() => {
        response.write('b');
        response.addTrailers({ 'x-done': '1' });
        response.end('c');
      }, 10);
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    expect(response.header('transfer-encoding')).toBe('chunked');
    expect(await text(response)).toBe('abc');
    expect(await text(await get(client, server.url))).toBe('abc');
    expect(client.connectionsOpened).toBe(1);
  });

  it('reads a close-delimited body and does not reuse its connection', async () => {
    server = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nabc');
      setTimeout(() => socket.end('def'), 10);
    });
    client = createNodeHttpClient({ clock: systemClock });
    expect(await text(await get(client, server.url))).toBe('abcdef');
    expect(await text(await get(client, server.url))).toBe('abcdef');
    expect(client.connectionsOpened).toBe(2);
  });

  it('has no body for 204, 304 and HEAD, and reuses the connection', async () => {
    server = await httpServer((request, response) => {
      if (request.url === '/204') response.writeHead(204).end();
      else if (request.url === '/304') response.writeHead(304).end();
      else
        response
          .writeHead(200, { 'content-length': '10' })
          .end(request.method === 'HEAD' ? undefined : '0123456789');
    });
    client = createNodeHttpClient({ clock: systemClock });
    const noContent = await get(client, `${server.url}/204`);
    expect(noContent.status).toBe(204);
    expect(await text(noContent)).toBe('');
    expect((await get(client, `${server.url}/304`)).status).toBe(304);
    const head = await client.request(server.url, {
      method: 'HEAD' as 'GET',
      headers: {},
      signal: new AbortController().signal,
    });
    expect(head.header('content-length')).toBe('10');
    expect(await text(head)).toBe('');
    expect(await text(await get(client, server.url))).toBe('0123456789');
    expect(client.connectionsOpened).toBe(1);
  });

  it('skips 1xx interim responses', async () => {
    server = await rawServer((socket) => {
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n');
      setTimeout(() => socket.write('HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok'), 10);
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    expect(response.status).toBe(201);
    expect(response.header('link')).toBeUndefined();
    expect(await text(response)).toBe('ok');
  });

  it('tolerates a head whose lines end in a bare LF', async () => {
    server = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\ncontent-length: 2\nx-a: 1\r\n\nok'));
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    expect(response.header('x-a')).toBe('1');
    expect(await text(response)).toBe('ok');
    expect(await text(await get(client, server.url))).toBe('ok');
    expect(client.connectionsOpened).toBe(1);
  });

  it('fails the body when the connection closes before its end', async () => {
    server = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
      setTimeout(() => socket.destroy(), 10);
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    await expect(text(response)).rejects.toThrow(/closed the connection before the response body ended/);
  });
});

describe('createNodeHttpClient keep-alive pool', () => {
  it('reuses one connection over 20 sequential requests', async () => {
    server = await httpServer((_request, response) => response.end('x'));
    client = createNodeHttpClient({ clock: systemClock });
    for (let i = 0; i < 20; i += 1) expect(await text(await get(client, server.url))).toBe('x');
    expect(client.connectionsOpened).toBe(1);
    expect(server.connections).toBe(1);
  });

  it('opens as many connections as there are concurrent requests, then reuses them', async () => {
    server = await httpServer((_request, response) => setTimeout(() => response.end('x'), 10));
    client = createNodeHttpClient({ clock: systemClock });
    const round = () =>
      Promise.all(Array.from({ length: 5 }, async () => text(await get(client, server!.url))));
    expect(await round()).toEqual(['x', 'x', 'x', 'x', 'x']);
    expect(await round()).toEqual(['x', 'x', 'x', 'x', 'x']);
    expect(client.connectionsOpened).toBe(5);
  });

  it('does not reuse a connection the server answered with connection: close, or an HTTP/1.0 one', async () => {
    server = await rawServer((socket, head) => {
      if (head.startsWith('GET /old')) socket.write('HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nx');
      else socket.write('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\nx');
    });
    client = createNodeHttpClient({ clock: systemClock });
    expect(await text(await get(client, server.url))).toBe('x');
    expect(await text(await get(client, server.url))).toBe('x');
    expect(await text(await get(client, `${server.url}/old`))).toBe('x');
    expect(client.connectionsOpened).toBe(3);
    await until(() => server!.closed === 3);
  });

  it('retries once on a new connection when a pooled socket closes before answering', async () => {
    server = await rawServer((socket, _head, index) => {
      // The second request on a connection meets a server that has just closed it.
      if (index > 0) socket.destroy();
      else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    });
    client = createNodeHttpClient({ clock: systemClock });
    expect(await text(await get(client, server.url))).toBe('ok');
    expect(await text(await get(client, server.url))).toBe('ok');
    expect(client.connectionsOpened).toBe(2);
  });

  it('rejects a fresh connection closed before any response with ECONNRESET (no retry)', async () => {
    server = await rawServer((socket) => socket.destroy());
    client = createNodeHttpClient({ clock: systemClock });
    const error = await get(client, server.url).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'ECONNRESET', message: 'socket hang up' });
    expect(client.connectionsOpened).toBe(1);
  });

  it('closes idle sockets after idleSocketMs, and close() closes pooled ones at once', async () => {
    server = await httpServer((_request, response) => response.end('x'));
    const clock = new ManualClock();
    client = createNodeHttpClient({ clock, idleSocketMs: 50 });
    await text(await get(client, server.url));
    expect(clock.pendingDelays()).toEqual([50]);
    clock.advance(49);
    expect(clock.pending).toBe(1);
    clock.advance(1);
    await until(() => server!.closed === 1);
    const other = createNodeHttpClient({ clock: systemClock });
    await text(await get(other, server.url));
    other.close();
    await until(() => server!.closed === 2);
    // A closed client's pool is empty; it still serves new requests.
    await text(await get(other, server.url));
    expect(other.connectionsOpened).toBe(2);
    other.close();
  });

  it("follows the server's keep-alive timeout hint, closing idle sockets a second before it would", async () => {
    server = await rawServer((socket, head) => {
      const hint = head.startsWith('GET /short') ? 1 : 2;
      socket.write(`HTTP/1.1 200 OK\r\nKeep-Alive: timeout=${hint}\r\ncontent-length: 1\r\n\r\nx`);
    });
    const clock = new ManualClock();
    client = createNodeHttpClient({ clock });
    // 1 s: too short to be worth pooling.
    await text(await get(client, `${server.url}/short`));
    await text(await get(client, `${server.url}/short`));
    expect(client.connectionsOpened).toBe(2);
    expect(clock.pending).toBe(0);
    await until(() => server!.closed === 2);
    // 2 s: pooled, and closed by the client after 1 s idle (each reuse re-arms the one idle timer).
    await text(await get(client, server.url));
    await text(await get(client, server.url));
    expect(client.connectionsOpened).toBe(3);
    expect(clock.pendingDelays()).toEqual([1000]);
    clock.advance(999);
    expect(server.closed).toBe(2);
    clock.advance(1);
    await until(() => server!.closed === 3);
  });

  it('keeps at most maxFreeSockets idle per origin', async () => {
    server = await httpServer((_request, response) => setTimeout(() => response.end('x'), 10));
    client = createNodeHttpClient({ clock: systemClock, maxFreeSockets: 2 });
    await Promise.all(Array.from({ length: 4 }, async () => text(await get(client, server!.url))));
    await until(() => server!.closed === 2);
  });
});

describe('createNodeHttpClient cancellation', () => {
  it('rejects with an AbortError and closes the connection when aborted before the headers', async () => {
    server = await rawServer(() => undefined);
    client = createNodeHttpClient({ clock: systemClock });
    const controller = new AbortController();
    const pending = get(client, server.url, controller.signal);
    await until(() => server!.connections === 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await until(() => server!.closed === 1);
    // An already aborted signal rejects at once without connecting.
    await expect(get(client, server.url, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(client.connectionsOpened).toBe(1);
  });

  it('breaks the body and closes the connection when aborted mid-body', async () => {
    server = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'));
    client = createNodeHttpClient({ clock: systemClock });
    const controller = new AbortController();
    const response = await get(client, server.url, controller.signal);
    const iterator = response.body[Symbol.asyncIterator]();
    expect(Buffer.from((await iterator.next()).value as Uint8Array).toString()).toBe('abc');
    const next = iterator.next();
    controller.abort();
    await expect(next).rejects.toMatchObject({ name: 'AbortError' });
    await until(() => server!.closed === 1);
  });

  it('cancel() closes the connection mid-body; after the end it changes nothing', async () => {
    server = await rawServer((socket, head) => {
      if (head.startsWith('GET /short')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
    });
    client = createNodeHttpClient({ clock: systemClock });
    const short = await get(client, `${server.url}/short`);
    await sleep(20);
    short.cancel();
    expect(await text(await get(client, `${server.url}/short`))).toBe('ok');
    expect(client.connectionsOpened).toBe(1);
    const long = await get(client, server.url);
    long.cancel();
    long.cancel();
    await until(() => server!.closed === 1);
    expect(await text(long)).toBe('');
  });

  it('discard() drains the rest so the connection is reused, and closes it when the rest does not come', async () => {
    server = await rawServer((socket, head) => {
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n');
      if (head.startsWith('GET /hang')) return;
      setTimeout(() => socket.write('1\r\nb\r\n'), 10);
      setTimeout(() => socket.write('0\r\n\r\n'), 20);
    });
    const clock = new ManualClock();
    client = createNodeHttpClient({ clock });
    const first = await get(client, server.url);
    for await (const chunk of first.body) {
      expect(Buffer.from(chunk).toString()).toBe('a');
      break;
    }
    first.discard();
    first.discard();
    await sleep(50);
    expect(await text(await get(client, server.url))).toBe('ab');
    expect(client.connectionsOpened).toBe(1);
    expect(server.closed).toBe(0);
    const hanging = await get(client, `${server.url}/hang`);
    hanging.discard();
    // The rest never comes: the connection is closed once the drain limit (1 s) has passed.
    expect(clock.pendingDelays()).toContain(1000);
    clock.advance(1000);
    await until(() => server!.closed === 1);
  });

  it('pauses the socket for a slow consumer (the server blocks), then delivers every byte', async () => {
    const total = 32 * 1024 * 1024;
    let written = 0;
    server = await httpServer((_request, response) => {
      const piece = Buffer.alloc(64 * 1024, 0x61);
      const pump = (): void => {
        while (written < total) {
          written += piece.length;
          if (written >= total) response.end(piece);
          else if (!response.write(piece)) {
            response.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    await sleep(300);
    // Without backpressure the client would have read all of it by now; paused, the socket buffers fill up.
    const writtenWhilePaused = written;
    expect(writtenWhilePaused).toBeLessThan(total / 2);
    let received = 0;
    for await (const chunk of response.body) received += chunk.byteLength;
    expect(received).toBe(total);
    expect(written).toBe(total);
  });
});

describe('createNodeHttpClient bad input', () => {
  it('rejects a response head over 64 KiB', async () => {
    server = await rawServer((socket) =>
      socket.write(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(70_000)}\r\n\r\n`),
    );
    client = createNodeHttpClient({ clock: systemClock });
    await expect(get(client, server.url)).rejects.toThrow(/response head over 65536 bytes/);
    await until(() => server!.closed === 1);
  });

  it('rejects a malformed status line, header line and content-length', async () => {
    server = await rawServer((socket, head) => {
      if (head.startsWith('GET /status')) socket.write('HTTP/1.1 abc\r\n\r\n');
      else if (head.startsWith('GET /header')) socket.write('HTTP/1.1 200 OK\r\nno colon here\r\n\r\n');
      else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n');
    });
    client = createNodeHttpClient({ clock: systemClock });
    await expect(get(client, `${server.url}/status`)).rejects.toThrow(
      /malformed status line "HTTP\/1.1 abc"/,
    );
    await expect(get(client, `${server.url}/header`)).rejects.toThrow(/malformed response header line/);
    await expect(get(client, `${server.url}/length`)).rejects.toThrow(/invalid content-length/);
    await until(() => server!.closed === 3);
  });

  it('fails the body on a malformed chunk', async () => {
    server = await rawServer((socket) =>
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'),
    );
    client = createNodeHttpClient({ clock: systemClock });
    const response = await get(client, server.url);
    await expect(text(response)).rejects.toThrow(/malformed chunk size/);
  });

  it('refuses CR/LF in a header value and invalid header names, without connecting', async () => {
    client = createNodeHttpClient({ clock: systemClock });
    const signal = new AbortController().signal;
    const url = 'http://127.0.0.1:9/';
    await expect(
      client.request(url, { method: 'GET', headers: { 'x-a': 'v\r\nx-injected: 1' }, signal }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_CHAR' });
    await expect(
      client.request(url, { method: 'GET', headers: { 'bad name': 'v' }, signal }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_HTTP_TOKEN' });
    expect(client.connectionsOpened).toBe(0);
  });

  it('sends latin-1 header values as latin-1 next to a UTF-8 body', async () => {
    server = await httpServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => response.end(JSON.stringify({ value: request.headers['x-name'], body })));
    });
    client = createNodeHttpClient({ clock: systemClock });
    const response = await client.request(server.url, {
      method: 'POST',
      headers: { 'x-name': 'caf\u00e9' },
      body: 'h\u00e9llo \u2713',
      signal: new AbortController().signal,
    });
    expect(JSON.parse(await text(response))).toEqual({ value: 'caf\u00e9', body: 'h\u00e9llo \u2713' });
  });
});

function hasOpenssl(): boolean {
  let present = true;
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    present = false;
  }
  return requireTool('openssl', present, 'node http client TLS tests', 'apt-get install openssl');
}

(hasOpenssl() ? describe : describe.skip)('createNodeHttpClient over TLS', () => {
  it('speaks https with SNI to a server whose self-signed certificate it was given, and refuses it otherwise', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-tls-'));
    let key: string;
    let cert: string;
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=DNS:localhost',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      key = readFileSync(join(dir, 'key.pem'), 'utf8');
      cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    let servername: string | undefined;
    const tlsServer = https.createServer({ key, cert }, (request, response) => {
      servername = (request.socket as unknown as { servername?: string }).servername;
      response.end('secure');
    });
    server = await listen(tlsServer, 'https', 'localhost');
    client = createNodeHttpClient({ clock: systemClock, extraCaCertificates: [cert] });
    expect(await text(await get(client, server.url))).toBe('secure');
    expect(await text(await get(client, server.url))).toBe('secure');
    expect(client.connectionsOpened).toBe(1);
    expect(servername).toBe('localhost');
    const untrusting = createNodeHttpClient({ clock: systemClock });
    const error = await get(untrusting, server.url).catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
    untrusting.close();
  });
});
