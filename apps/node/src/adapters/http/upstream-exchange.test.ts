import { ManualClock, systemClock } from '@iop/clock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startFakeOllama, type FakeServer } from '@iop/testkit';

import { closedPortUrl } from './test-support/http-adapter-fixtures.js';
import { fetchHttpClient, type HttpClient, type HttpClientResponse } from './http-client.js';
import { InflightSet } from './inflight-set.js';
import { createNodeHttpClient } from './node-http-client.js';
import { UpstreamExchange } from './upstream-exchange.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

async function drain(ex: UpstreamExchange, response: HttpClientResponse): Promise<string> {
  let text = '';
  for await (const chunk of ex.chunks(response)) text += Buffer.from(chunk).toString('utf8');
  return text;
}

const chatBody = { model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }] };

const nodeClient = createNodeHttpClient({ clock: systemClock });
afterAll(() => nodeClient.close());

describe.each<[string, HttpClient]>([
  ['node:http keep-alive client', nodeClient],
  ['fetch client', fetchHttpClient(globalThis.fetch)],
])('UpstreamExchange over the %s', (_name, http) => {
  let server: FakeServer;
  const exchange = (signal: AbortSignal, idleTimeoutMs = 2000): UpstreamExchange =>
    new UpstreamExchange({ http, now: () => performance.now(), clock: systemClock, signal, idleTimeoutMs });
  beforeEach(async () => {
    server = await startFakeOllama();
  });
  afterEach(async () => {
    await server.close();
  });

  it('counts only the waits on the backend in backendMs, not a slow consumer', async () => {
    server.setBehavior({ firstTokenDelayMs: 30, tokenDelayMs: 0, tokenCount: 5 });
    const ex = exchange(new AbortController().signal);
    const started = performance.now();
    const response = await ex.send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: chatBody });
    let chunks = 0;
    for await (const chunk of ex.chunks(response)) {
      expect(chunk.byteLength).toBeGreaterThan(0);
      chunks += 1;
      // The node "working" on each chunk: time the backend is not responsible for.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    ex.finish();
    const wall = performance.now() - started;
    expect(chunks).toBeGreaterThan(0);
    expect(ex.backendMs).toBeGreaterThanOrEqual(25);
    expect(wall - ex.backendMs).toBeGreaterThanOrEqual(35 * chunks);
    ex.dispose();
  });

  it('measures the exchange and stops the clock at finish()', async () => {
    server.setBehavior({ firstTokenDelayMs: 50 });
    const ex = exchange(new AbortController().signal);
    const response = await ex.send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: chatBody });
    await drain(ex, response);
    ex.finish();
    const measured = ex.backendMs;
    expect(measured).toBeGreaterThanOrEqual(45);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ex.backendMs).toBe(measured);
    ex.dispose();
  });

  it('throws upstream_http_<status> with the body message', async () => {
    const ex = exchange(new AbortController().signal);
    const error = await ex
      .send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: { model: 'ghost', messages: [] } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).code).toBe('upstream_http_404');
    expect((error as UpstreamError).message).toBe("model 'ghost' not found");
    expect((error as UpstreamError).retryable).toBe(false);
    ex.dispose();
  });

  it('classifies a refused connection as upstream_unreachable', async () => {
    const url = await closedPortUrl();
    const ex = exchange(new AbortController().signal);
    const error = await ex
      .send(`${url}/api/tags`, { method: 'GET', headers: {} })
      .catch((caught: unknown) => caught);
    expect((error as UpstreamError).code).toBe('upstream_unreachable');
    expect((error as UpstreamError).message).toContain('ECONNREFUSED');
    ex.dispose();
  });

  it('times out after idleTimeoutMs of silence mid-stream, not on a long but flowing stream', async () => {
    server.setBehavior({ tokenDelayMs: 40, tokenCount: 6 });
    const flowing = exchange(new AbortController().signal, 100);
    const text = await drain(
      flowing,
      await flowing.send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: chatBody }),
    );
    expect(text).toContain('"done":true');
    flowing.dispose();

    server.setBehavior({ tokenDelayMs: 0, failure: { kind: 'stall', afterTokens: 2 } });
    const stalled = exchange(new AbortController().signal, 100);
    const response = await stalled.send(`${server.url}/api/chat`, {
      method: 'POST',
      headers: {},
      body: chatBody,
    });
    const error = await drain(stalled, response).catch((caught: unknown) => caught);
    expect((error as UpstreamError).code).toBe('upstream_timeout');
    stalled.dispose();
  });

  it('reports a dropped connection as upstream_error', async () => {
    server.setBehavior({ failure: { kind: 'drop', afterTokens: 1 } });
    const ex = exchange(new AbortController().signal);
    const response = await ex.send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: chatBody });
    const error = await drain(ex, response).catch((caught: unknown) => caught);
    expect((error as UpstreamError).code).toBe('upstream_error');
    expect((error as UpstreamError).message).toMatch(/connection lost/);
    ex.dispose();
  });

  it('turns a caller abort into UpstreamCancelled with the reason and closes the upstream request', async () => {
    server.setBehavior({ tokenDelayMs: 50, tokenCount: 100 });
    const controller = new AbortController();
    const ex = exchange(controller.signal);
    const response = await ex.send(`${server.url}/api/chat`, { method: 'POST', headers: {}, body: chatBody });
    setTimeout(() => controller.abort('user cancel'), 30);
    const error = await drain(ex, response).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UpstreamCancelled);
    expect((error as UpstreamCancelled).reason).toBe('user cancel');
    await server.waitForIdle(100);
    expect(server.requests[0].outcome).toBe('client-closed');
    ex.dispose();
  });
});

describe('node:http keep-alive client', () => {
  let server: FakeServer;
  beforeEach(async () => {
    server = await startFakeOllama();
  });
  afterEach(async () => {
    await server.close();
  });

  it('reuses one connection for sequential requests and closes it on cancel()', async () => {
    const client = createNodeHttpClient({ clock: systemClock });
    try {
      for (let i = 0; i < 3; i += 1) {
        const response = await client.request(`${server.url}/api/tags`, {
          method: 'GET',
          headers: {},
          signal: new AbortController().signal,
        });
        expect(response.status).toBe(200);
        expect(response.header('Content-Type')).toContain('application/json');
        for await (const chunk of response.body) expect(chunk.byteLength).toBeGreaterThan(0);
      }
      expect(client.connectionsOpened).toBe(1);

      server.setBehavior({ tokenDelayMs: 30, tokenCount: 100 });
      const streaming = await client.request(`${server.url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody),
        signal: new AbortController().signal,
      });
      streaming.cancel();
      streaming.cancel();
      await server.waitForIdle(1000);
      expect(server.requests.at(-1)?.outcome).toBe('client-closed');
    } finally {
      client.close();
    }
  });

  it('discard() drains the rest of a body so the next request reuses the connection', async () => {
    const client = createNodeHttpClient({ clock: systemClock });
    try {
      server.setBehavior({ tokenDelayMs: 5, tokenCount: 4 });
      const request = () =>
        client.request(`${server.url}/api/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(chatBody),
          signal: new AbortController().signal,
        });
      const first = await request();
      for await (const chunk of first.body) {
        expect(chunk.byteLength).toBeGreaterThan(0);
        break;
      }
      first.discard();
      await server.waitForIdle(1000);
      expect(server.requests.at(-1)?.outcome).not.toBe('client-closed');
      // The server finished; give the client a moment to read the last bytes and pool the socket.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const second = await request();
      expect(client.connectionsOpened).toBe(1);
      second.cancel();
      await server.waitForIdle(1000);
      // A cancelled response cannot be reused: the next request needs a new connection.
      (await request()).cancel();
      expect(client.connectionsOpened).toBe(2);
    } finally {
      client.close();
    }
  });

  it('rejects a refused connection with its errno code', async () => {
    const client = createNodeHttpClient({ clock: systemClock });
    const url = await closedPortUrl();
    const error = await client
      .request(`${url}/api/tags`, { method: 'GET', headers: {}, signal: new AbortController().signal })
      .catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe('ECONNREFUSED');
    client.close();
  });
});

describe('InflightSet', () => {
  const exchangeFor = (signal: AbortSignal): UpstreamExchange =>
    new UpstreamExchange({
      http: nodeClient,
      now: () => 0,
      clock: new ManualClock(),
      signal,
      idleTimeoutMs: 1000,
    });

  it('cancels tracked exchanges on closeAll, cancels later ones at once, and releases idempotently', () => {
    const set = new InflightSet();
    const first = exchangeFor(new AbortController().signal);
    set.add(first);
    expect(set.size).toBe(1);
    set.closeAll('shutdown');
    expect(first.cancelled).toBe(true);
    expect(first.cancelReason).toBe('shutdown');
    const late = exchangeFor(new AbortController().signal);
    set.add(late);
    expect(late.cancelled).toBe(true);
    expect(set.size).toBe(1);
    set.release(first);
    set.release(first);
    set.release(late);
    expect(set.size).toBe(0);
    first.dispose();
    late.dispose();
  });
});

describe('UpstreamExchange cancellation', () => {
  it("follows the caller's signal, and tells a cancel from its own timeout", async () => {
    const caller = new AbortController();
    const clock = new ManualClock(0);
    const followed = new UpstreamExchange({
      http: nodeClient,
      now: () => 0,
      clock,
      signal: caller.signal,
      idleTimeoutMs: 1000,
    });
    caller.abort('cancel');
    expect(followed.cancelled).toBe(true);
    expect(followed.cancelReason).toBe('cancel');
    followed.dispose();
    // An exchange that timed out is not cancelled: its failure is upstream_timeout (a server that never answers).
    const timedOut = new UpstreamExchange({
      http: {
        request: (_url, init) =>
          new Promise((_, reject) =>
            init.signal.addEventListener('abort', () => reject(new Error('aborted'))),
          ),
      },
      now: () => 0,
      clock,
      signal: new AbortController().signal,
      idleTimeoutMs: 20,
    });
    const sent = timedOut.send('http://127.0.0.1:9/x', { method: 'GET', headers: {} });
    clock.advance(19);
    expect(timedOut.cancelled).toBe(false);
    clock.advance(1);
    const error = await sent.catch((caught: unknown) => caught);
    expect(timedOut.cancelled).toBe(false);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).code).toBe('upstream_timeout');
    timedOut.dispose();
  });
});

/** A response body the test feeds chunk by chunk; the request's abort breaks it as a closed connection would. */
class FedBody implements AsyncIterator<Uint8Array> {
  private readonly queued: Uint8Array[] = [];
  private waiting:
    { resolve: (result: IteratorResult<Uint8Array>) => void; reject: (error: Error) => void } | undefined;
  private broken: Error | undefined;

  feed(text: string): void {
    const chunk = Buffer.from(text);
    if (this.waiting) {
      this.waiting.resolve({ done: false, value: chunk });
      this.waiting = undefined;
    } else this.queued.push(chunk);
  }

  break(error: Error): void {
    this.broken = error;
    this.waiting?.reject(error);
    this.waiting = undefined;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    const chunk = this.queued.shift();
    if (chunk) return Promise.resolve({ done: false, value: chunk });
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }
}

describe('UpstreamExchange inactivity deadline on the clock', () => {
  it('is pushed back by every chunk on its one timer, and fires after idleTimeoutMs of silence', async () => {
    const clock = new ManualClock(0);
    const body = new FedBody();
    const http: HttpClient = {
      request: (_url, init) => {
        init.signal.addEventListener('abort', () => body.break(new Error('aborted')), { once: true });
        return Promise.resolve({
          status: 200,
          statusText: 'OK',
          header: () => undefined,
          body: { [Symbol.asyncIterator]: () => body },
          cancel: () => undefined,
          discard: () => undefined,
        });
      },
    };
    const exchange = new UpstreamExchange({
      http,
      now: () => clock.now(),
      clock,
      signal: new AbortController().signal,
      idleTimeoutMs: 100,
    });
    const response = await exchange.send('http://127.0.0.1:9/x', { method: 'GET', headers: {} });
    const chunks = exchange.chunks(response)[Symbol.asyncIterator]();
    // A stream far longer than the timeout that never pauses for 100 ms is not cut.
    for (let index = 0; index < 10; index += 1) {
      clock.advance(99);
      body.feed(`chunk ${index}`);
      expect(Buffer.from((await chunks.next()).value as Uint8Array).toString()).toBe(`chunk ${index}`);
      expect(clock.pending).toBe(1);
    }
    const silent = chunks.next();
    clock.advance(99);
    expect(clock.pendingDelays()).toEqual([1]);
    clock.advance(1);
    const error = await silent.catch((caught: unknown) => caught);
    expect((error as UpstreamError).code).toBe('upstream_timeout');
    expect(exchange.cancelled).toBe(false);
    exchange.dispose();
    expect(clock.pending).toBe(0);
  });
});
