// A fixed-latency OpenAI-compatible backend for the benchmark: deliberately minimal so that it is never the
// bottleneck and its own time is the same on both measured paths. Every chat completion waits `latencyMs` (one
// timer), then answers `max_tokens` tokens (default `defaultTokens`) as one JSON body or as SSE chunks in the
// shape vLLM sends (role chunk, one chunk per token, finish chunk, usage chunk, [DONE]). Streams honour socket
// backpressure and write `batch` events per socket write, like a server flushing once per decode step.
import http from 'node:http';

const MODEL = 'bench-model';

/**
 * @param {{ port?: number, latencyMs: number, defaultTokens?: number, batch?: number }} options
 * @returns {Promise<{ url: string, close(): Promise<void> }>}
 */
export async function startFakeBackend(options) {
  const latencyMs = options.latencyMs;
  const defaultTokens = options.defaultTokens ?? 16;
  const batch = options.batch ?? 16;
  const server = http.createServer((request, response) => {
    if (request.method === 'GET' && (request.url === '/v1/models' || request.url === '/models')) {
      sendJson(response, { object: 'list', data: [{ id: MODEL, object: 'model', owned_by: 'bench' }] });
      return;
    }
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"not found","type":"NotFoundError","param":null,"code":404}}');
      return;
    }
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end('{"error":{"message":"bad json","type":"BadRequestError","param":null,"code":400}}');
        return;
      }
      const tokens =
        Number.isInteger(body.max_tokens) && body.max_tokens > 0 ? body.max_tokens : defaultTokens;
      const stream = body.stream === true;
      const includeUsage = body.stream_options?.include_usage === true;
      setTimeout(() => {
        if (stream) void streamTokens(response, tokens, includeUsage, batch);
        else sendJson(response, completion(tokens));
      }, latencyMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sendJson(response, value) {
  const text = JSON.stringify(value);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function completion(tokens) {
  return {
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: MODEL,
    choices: [
      { index: 0, message: { role: 'assistant', content: 'tok '.repeat(tokens) }, finish_reason: 'stop' },
    ],
    usage: { prompt_tokens: 4, completion_tokens: tokens, total_tokens: tokens + 4 },
  };
}

const created = Math.floor(Date.now() / 1000);
const chunkPrefix = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${created},"model":"${MODEL}","choices":[{"index":0,"delta":`;
const TOKEN_EVENT = `${chunkPrefix}{"content":"tok "},"finish_reason":null}]}\n\n`;

async function streamTokens(response, tokens, includeUsage, batch) {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(`${chunkPrefix}{"role":"assistant","content":""},"finish_reason":null}]}\n\n`);
  let sent = 0;
  while (sent < tokens) {
    if (response.destroyed) return;
    const count = Math.min(batch, tokens - sent);
    sent += count;
    const ok = response.write(TOKEN_EVENT.repeat(count));
    // Yield between decode steps so concurrent streams interleave; wait for the socket when it is full.
    if (!ok) await new Promise((resolve) => response.once('drain', resolve));
    else await new Promise((resolve) => setImmediate(resolve));
  }
  let tail = `${chunkPrefix}{},"finish_reason":"stop"}]}\n\n`;
  if (includeUsage) {
    tail += `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${created},"model":"${MODEL}","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":${tokens},"total_tokens":${tokens + 4}}}\n\n`;
  }
  response.end(`${tail}data: [DONE]\n\n`);
}
