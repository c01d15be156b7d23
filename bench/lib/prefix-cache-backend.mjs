// An OpenAI-compatible fake backend with a prefix cache (./prefix-cache.mjs), for the affinity bench. Its time to
// first token is what a compute-bound prefill costs: `firstTokenBaseMs` plus `msPerUnseenToken` for every prompt
// token it has not seen before (the tokens outside the longest cached prefix of the message list). Prefills run
// one at a time in arrival order (one accelerator: a prefill that arrives while another runs waits for it), the
// answer then streams `answerTokens` words, one every `tokenIntervalMs`, alongside the next prefills. After the
// prefill the prompt is cached; after the answer, the prompt followed by the answer as an assistant message (what
// the client sends back as the next turn's context).
//
// GET /stats answers the backend's own counts: requests, prompt/cached/unseen tokens, first turns and follow-ups
// (a request whose messages hold an assistant turn) and how many follow-ups found their previous turn cached
// (`follow_up_hits`: the cached prefix reaches the last assistant message), the most requests it had at once.
import http from 'node:http';
import { PrefixCache, prefixHashes } from './prefix-cache.mjs';

const MODEL = 'bench-model';
const MAX_BODY_BYTES = 16 * 2 ** 20;
const WORDS = ['read', 'file', 'edit', 'test', 'run', 'ok', 'fix', 'next', 'call', 'tool', 'diff', 'line'];

/**
 * @param {{ name: string, port?: number, firstTokenBaseMs: number, msPerUnseenToken: number,
 *   capacityTokens: number, answerTokens: number, tokenIntervalMs: number, model?: string }} options
 * @returns {Promise<{ url: string, name: string, stats(): object, close(): Promise<void> }>}
 */
export async function startPrefixCacheBackend(options) {
  for (const key of ['firstTokenBaseMs', 'msPerUnseenToken', 'tokenIntervalMs']) {
    if (!Number.isFinite(options[key]) || options[key] < 0)
      throw new RangeError(`${key} must be a non-negative number`);
  }
  if (!Number.isInteger(options.answerTokens) || options.answerTokens < 1)
    throw new RangeError('answerTokens must be a positive integer');
  const model = options.model ?? MODEL;
  const cache = new PrefixCache({ capacityTokens: options.capacityTokens });
  const counts = {
    requests: 0,
    rejected: 0,
    prompt_tokens: 0,
    cached_tokens: 0,
    unseen_tokens: 0,
    first_turns: 0,
    follow_ups: 0,
    follow_up_hits: 0,
    in_flight: 0,
    max_in_flight: 0,
  };
  let prefillFreeAt = 0;

  const server = http.createServer((request, response) => {
    if (request.method === 'GET' && (request.url === '/v1/models' || request.url === '/models')) {
      sendJson(response, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'bench' }] });
      return;
    }
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (request.method === 'GET' && request.url === '/stats') {
      sendJson(response, 200, stats());
      return;
    }
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      sendError(response, 404, 'not found');
      return;
    }
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      else if (!tooLarge) {
        // Answer at once and close the connection; the rest of the body is not read.
        tooLarge = true;
        chunks.length = 0;
        counts.rejected += 1;
        response.setHeader('connection', 'close');
        sendError(response, 413, `body larger than ${MAX_BODY_BYTES} bytes`);
        response.once('finish', () => request.destroy());
      }
    });
    request.on('end', () => {
      if (tooLarge) return;
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        counts.rejected += 1;
        sendError(response, 400, 'body is not JSON');
        return;
      }
      if (!Array.isArray(body?.messages) || body.messages.length === 0) {
        counts.rejected += 1;
        sendError(response, 400, 'messages must be a non-empty array');
        return;
      }
      serve(body, response);
    });
  });

  function serve(body, response) {
    const messages = body.messages;
    counts.requests += 1;
    counts.in_flight += 1;
    counts.max_in_flight = Math.max(counts.max_in_flight, counts.in_flight);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      counts.in_flight -= 1;
    };
    response.once('close', end);
    const seen = cache.lookup(messages);
    counts.prompt_tokens += seen.totalTokens;
    counts.cached_tokens += seen.cachedTokens;
    counts.unseen_tokens += seen.unseenTokens;
    const lastAssistant = messages.findLastIndex((message) => message?.role === 'assistant');
    if (lastAssistant === -1) counts.first_turns += 1;
    else {
      counts.follow_ups += 1;
      if (seen.cachedMessages > lastAssistant) counts.follow_up_hits += 1;
    }
    const now = performance.now();
    const prefillStart = Math.max(now, prefillFreeAt);
    const prefillMs = options.firstTokenBaseMs + options.msPerUnseenToken * seen.unseenTokens;
    prefillFreeAt = prefillStart + prefillMs;
    // What this model decided, for tests and for reading a trace: a client of the relay never sees these.
    response.setHeader('x-prefix-unseen-tokens', String(seen.unseenTokens));
    response.setHeader('x-prefix-cached-tokens', String(seen.cachedTokens));
    response.setHeader('x-prefill-ms', prefillMs.toFixed(3));
    response.setHeader('x-prefill-wait-ms', (prefillStart - now).toFixed(3));
    const usage = {
      prompt_tokens: seen.totalTokens,
      completion_tokens: options.answerTokens,
      total_tokens: seen.totalTokens + options.answerTokens,
      prompt_tokens_details: { cached_tokens: seen.cachedTokens },
    };
    const words = answerWords(messages, options.answerTokens);
    const answer = words.join('');
    const finish = () => {
      cache.insert([...messages, { role: 'assistant', content: answer }]);
      end();
    };
    setTimeout(() => {
      if (response.destroyed) return end();
      cache.insert(messages);
      if (body.stream === true) {
        void streamAnswer(response, words, body.stream_options?.include_usage === true ? usage : undefined)
          .then((complete) => (complete ? finish() : end()))
          .catch(() => end());
      } else {
        setTimeout(() => {
          if (response.destroyed) return end();
          sendJson(response, 200, completion(answer, usage));
          finish();
        }, options.tokenIntervalMs * options.answerTokens);
      }
    }, prefillFreeAt - now);
  }

  const chunkHead = (id) =>
    `data: {"id":"${id}","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},"model":"${model}","choices":`;

  async function streamAnswer(response, words, usage) {
    const id = `chatcmpl-${options.name}`;
    const head = chunkHead(id);
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.write(
      `${head}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n`,
    );
    for (let index = 0; index < words.length; index += 1) {
      if (response.destroyed) return false;
      if (index > 0 && options.tokenIntervalMs > 0)
        await new Promise((resolve) => setTimeout(resolve, options.tokenIntervalMs));
      const delta = JSON.stringify({ content: words[index] });
      response.write(`${head}[{"index":0,"delta":${delta},"finish_reason":null}]}\n\n`);
    }
    let tail = `${head}[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n`;
    if (usage) tail += `${head}[],"usage":${JSON.stringify(usage)}}\n\n`;
    response.end(`${tail}data: [DONE]\n\n`);
    return true;
  }

  function completion(answer, usage) {
    return {
      id: `chatcmpl-${options.name}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
      usage,
    };
  }

  function stats() {
    return {
      name: options.name,
      ...counts,
      cache_tokens: cache.tokens,
      cache_entries: cache.entries.size,
      evicted_tokens: cache.evictedTokens,
    };
  }

  server.keepAliveTimeout = 60_000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    name: options.name,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The answer to a prompt: `count` words (one token each) derived from the prompt only (so answers differ by turn,
 * and every backend answers a prompt alike).
 */
function answerWords(messages, count) {
  const digest = Buffer.from(prefixHashes(messages).at(-1), 'hex');
  const words = [`done:${digest.subarray(0, 4).toString('hex')} `];
  for (let index = 1; index < count; index += 1)
    words.push(`${WORDS[digest[index % digest.length] % WORDS.length]} `);
  return words;
}

function sendJson(response, status, value) {
  const text = JSON.stringify(value);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function sendError(response, status, message) {
  sendJson(response, status, {
    error: {
      message,
      type: status === 404 ? 'NotFoundError' : status === 413 ? 'RequestTooLargeError' : 'BadRequestError',
      param: null,
      code: status,
    },
  });
}
