import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startFakeOllama, type FakeServer } from '@iop/testkit';

import { closedPortUrl } from './test-support/http-adapter-fixtures.js';
import { InflightSet } from './inflight-set.js';
import { UpstreamExchange } from './upstream-exchange.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

function exchange(signal: AbortSignal, idleTimeoutMs = 2000): UpstreamExchange {
  return new UpstreamExchange({ fetch: globalThis.fetch, now: () => Date.now(), signal, idleTimeoutMs });
}

async function drain(ex: UpstreamExchange, response: Response): Promise<string> {
  let text = '';
  for await (const chunk of ex.chunks(response)) text += Buffer.from(chunk).toString('utf8');
  return text;
}

const chatBody = { model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }] };

describe('UpstreamExchange', () => {
  let server: FakeServer;
  beforeEach(async () => {
    server = await startFakeOllama();
  });
  afterEach(async () => {
    await server.close();
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

describe('InflightSet', () => {
  it('aborts tracked entries on closeAll, starts later ones aborted, and releases once', () => {
    const set = new InflightSet();
    const caller = new AbortController();
    const first = set.track(caller.signal);
    expect(set.size).toBe(1);
    set.closeAll('shutdown');
    expect(first.signal.aborted).toBe(true);
    expect(first.signal.reason).toBe('shutdown');
    const late = set.track(new AbortController().signal);
    expect(late.signal.aborted).toBe(true);
    first.release();
    first.release();
    late.release();
    expect(set.size).toBe(0);
  });

  it('follows the caller signal', () => {
    const set = new InflightSet();
    const caller = new AbortController();
    const entry = set.track(caller.signal);
    caller.abort('cancel');
    expect(entry.signal.reason).toBe('cancel');
    entry.release();
  });
});
