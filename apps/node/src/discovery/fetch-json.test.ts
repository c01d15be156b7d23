import { describe, expect, it } from '@jest/globals';
import { fetchJson, PROBE_MAX_BODY_BYTES } from './fetch-json.js';
import { fakeProbeDeps } from './test-support/fake-probe-deps.js';

describe('fetchJson', () => {
  it('gives up at its deadline on a server that never answers, even when fetch ignores the signal', async () => {
    const deps = fakeProbeDeps({ http: { 'http://127.0.0.1:1/x': 'hang' } });
    const started = Date.now();
    const result = await fetchJson(deps.http, 'http://127.0.0.1:1/x', {
      timeoutMs: 100,
      signal: new AbortController().signal,
    });
    expect(result).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('stops at once when the caller aborts', async () => {
    const deps = fakeProbeDeps({ http: { 'http://127.0.0.1:1/x': 'hang' } });
    const controller = new AbortController();
    const pending = fetchJson(deps.http, 'http://127.0.0.1:1/x', {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    controller.abort();
    await expect(pending).resolves.toBeUndefined();
  });

  it('returns undefined for error statuses, non-JSON and bodies over the cap', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(PROBE_MAX_BODY_BYTES) });
    const deps = fakeProbeDeps({
      http: {
        'http://h/error': { status: 500, body: '{"error":"boom"}' },
        'http://h/text': { status: 200, body: 'hello' },
        'http://h/big': { status: 200, body: big },
        'http://h/ok': { status: 200, body: '{"ok":true}' },
      },
    });
    const options = { timeoutMs: 1000, signal: new AbortController().signal };
    expect(await fetchJson(deps.http, 'http://h/error', options)).toBeUndefined();
    expect(await fetchJson(deps.http, 'http://h/text', options)).toBeUndefined();
    expect(await fetchJson(deps.http, 'http://h/big', options)).toBeUndefined();
    expect(await fetchJson(deps.http, 'http://h/ok', options)).toEqual({ ok: true });
  });
});
