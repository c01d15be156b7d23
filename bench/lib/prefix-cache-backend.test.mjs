// Tests of the prefix-cache fake backend over real HTTP on 127.0.0.1 (node --test bench/lib/).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPrefixCacheBackend } from './prefix-cache-backend.mjs';
import { messageTokens } from './prefix-cache.mjs';

const MS_PER_TOKEN = 0.5;
const BASE_MS = 5;

async function chat(url, body) {
  const start = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let firstChunkMs;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = decoder.decode(value, { stream: true });
    // The backend writes nothing (not even headers) before its prefill is done.
    if (firstChunkMs === undefined && chunk.length > 0) firstChunkMs = performance.now() - start;
    text += chunk;
  }
  const header = (name) => Number(response.headers.get(name));
  return {
    status: response.status,
    text,
    firstChunkMs,
    totalMs: performance.now() - start,
    unseen: header('x-prefix-unseen-tokens'),
    cached: header('x-prefix-cached-tokens'),
    prefillMs: header('x-prefill-ms'),
    waitMs: header('x-prefill-wait-ms'),
  };
}

/** Concatenated content deltas of an SSE body. */
function streamedContent(text) {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');
}

async function stats(url) {
  return (await fetch(`${url}/stats`)).json();
}

describe('prefix-cache backend', () => {
  let backend;
  before(async () => {
    backend = await startPrefixCacheBackend({
      name: 't0',
      firstTokenBaseMs: BASE_MS,
      msPerUnseenToken: MS_PER_TOKEN,
      capacityTokens: 100_000,
      answerTokens: 6,
      tokenIntervalMs: 0,
    });
  });
  after(() => backend.close());

  it('takes time to first token in proportion to the unseen prompt, and the next turn only pays for what it adds', async () => {
    const system = { role: 'system', content: 'You are a test. '.repeat(100) }; // 400 + 4 tokens
    const task = { role: 'user', content: 'task '.repeat(160) }; // 200 + 4 tokens
    const first = await chat(backend.url, { model: 'bench-model', messages: [system, task], stream: true });
    assert.equal(first.status, 200);
    const coldTokens = messageTokens(system) + messageTokens(task);
    assert.equal(first.unseen, coldTokens);
    assert.equal(first.cached, 0);
    assert.equal(first.prefillMs, BASE_MS + MS_PER_TOKEN * coldTokens);
    assert.ok(
      first.firstChunkMs >= BASE_MS + MS_PER_TOKEN * coldTokens - 5,
      `cold TTFT ${first.firstChunkMs} ms for ${coldTokens} tokens`,
    );
    const answer = streamedContent(first.text);
    assert.equal(answer.trim().split(' ').length, 6);
    assert.match(first.text, /data: \[DONE\]\n\n$/);

    const next = { role: 'user', content: 'ok' };
    const second = await chat(backend.url, {
      model: 'bench-model',
      messages: [system, task, { role: 'assistant', content: answer }, next],
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(second.status, 200);
    // Unseen: just the new user message (5 tokens: 2.5 ms + 5 ms), far below the cold prefill of ~300 ms.
    assert.equal(second.unseen, messageTokens(next));
    assert.equal(second.cached, coldTokens + messageTokens({ role: 'assistant', content: answer }));
    assert.equal(second.prefillMs, BASE_MS + MS_PER_TOKEN * messageTokens(next));
    assert.ok(second.firstChunkMs < first.firstChunkMs / 2, `warm TTFT ${second.firstChunkMs} ms`);
    const usage = second.text
      .split('\n')
      .filter((line) => line.startsWith('data: {') && line.includes('"usage"'))
      .map((line) => JSON.parse(line.slice(6)).usage)[0];
    assert.equal(usage.prompt_tokens - usage.prompt_tokens_details.cached_tokens, messageTokens(next));

    const counted = await stats(backend.url);
    assert.equal(counted.requests, 2);
    assert.equal(counted.first_turns, 1);
    assert.equal(counted.follow_ups, 1);
    assert.equal(counted.follow_up_hits, 1);
    assert.equal(counted.unseen_tokens, coldTokens + messageTokens(next));
    assert.equal(counted.in_flight, 0);
  });

  it('counts a follow-up whose previous turn it never served as a miss, and answers alike whoever serves it', async () => {
    const other = await startPrefixCacheBackend({
      name: 't1',
      firstTokenBaseMs: 0,
      msPerUnseenToken: 0,
      capacityTokens: 1000,
      answerTokens: 3,
      tokenIntervalMs: 0,
    });
    try {
      const messages = [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi' },
        { role: 'user', content: 'again' },
      ];
      const streamed = await chat(other.url, { model: 'bench-model', messages, stream: true });
      const plain = await fetch(`${other.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench-model', messages }),
      });
      const body = await plain.json();
      assert.equal(body.choices[0].message.content, streamedContent(streamed.text));
      const counted = await stats(other.url);
      assert.equal(counted.follow_ups, 2);
      // The first of the two was cold; the second found the whole prompt cached by the first.
      assert.equal(counted.follow_up_hits, 1);
      assert.equal(body.usage.prompt_tokens_details.cached_tokens, body.usage.prompt_tokens);
    } finally {
      await other.close();
    }
  });

  it('runs prefills one at a time: a second cold prompt waits for the first', async () => {
    const serial = await startPrefixCacheBackend({
      name: 't2',
      firstTokenBaseMs: 0,
      msPerUnseenToken: 1,
      capacityTokens: 10_000,
      answerTokens: 1,
      tokenIntervalMs: 0,
    });
    try {
      const prompt = (label) => [{ role: 'user', content: `${label} `.repeat(400) }]; // 200 + 4 tokens each
      const [a, b] = await Promise.all([
        chat(serial.url, { model: 'bench-model', messages: prompt('a'), stream: true }),
        chat(serial.url, { model: 'bench-model', messages: prompt('b'), stream: true }),
      ]);
      const [first, second] = [a, b].sort((x, y) => x.waitMs - y.waitMs);
      const tokens = messageTokens(prompt('a')[0]);
      assert.equal(first.prefillMs, tokens);
      // The second arrived while the first's prefill ran: it waits for the rest of it (less what elapsed between
      // the two arrivals), then takes its own.
      assert.ok(second.waitMs > tokens - 100 && second.waitMs <= tokens, `second waited ${second.waitMs} ms`);
      assert.ok(second.firstChunkMs >= 2 * tokens - 100, `second TTFT ${second.firstChunkMs} ms`);
      assert.equal((await stats(serial.url)).max_in_flight, 2);
    } finally {
      await serial.close();
    }
  });

  it('answers bad input with a 400 and counts it, without touching the cache', async () => {
    const before = await stats(backend.url);
    const notJson = await fetch(`${backend.url}/v1/chat/completions`, { method: 'POST', body: '{' });
    assert.equal(notJson.status, 400);
    const noMessages = await fetch(`${backend.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'bench-model', messages: [] }),
    });
    assert.equal(noMessages.status, 400);
    assert.match((await noMessages.json()).error.message, /messages/);
    const huge = await fetch(`${backend.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'bench-model',
        messages: [{ role: 'user', content: 'x'.repeat(17 * 2 ** 20) }],
      }),
    }).catch((error) => error);
    // The backend answers 413 before it has read the whole body; a client may see the answer or the reset.
    if (!(huge instanceof Error)) assert.equal(huge.status, 413);
    const afterBad = await stats(backend.url);
    assert.equal(afterBad.rejected - before.rejected, 3);
    assert.equal(afterBad.requests, before.requests);
    assert.equal(afterBad.cache_tokens, before.cache_tokens);
    assert.equal((await fetch(`${backend.url}/nope`)).status, 404);
    assert.deepEqual(
      (await (await fetch(`${backend.url}/v1/models`)).json()).data.map((m) => m.id),
      ['bench-model'],
    );
  });

  it('refuses options that cannot model a backend', async () => {
    await assert.rejects(
      startPrefixCacheBackend({
        name: 'x',
        firstTokenBaseMs: -1,
        msPerUnseenToken: 0,
        capacityTokens: 1,
        answerTokens: 1,
        tokenIntervalMs: 0,
      }),
      RangeError,
    );
    await assert.rejects(
      startPrefixCacheBackend({
        name: 'x',
        firstTokenBaseMs: 0,
        msPerUnseenToken: 0,
        capacityTokens: 1,
        answerTokens: 0,
        tokenIntervalMs: 0,
      }),
      RangeError,
    );
  });
});
