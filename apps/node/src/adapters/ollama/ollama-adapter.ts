// The `ollama` adapter: runs chat requests against Ollama's native API (streaming NDJSON upstream, or one JSON
// body with `stream: false` for a run whose caller collects the whole answer, `RunRequest.collect`; that body is
// the stream's final line with the whole message, read by the same parser, and the whole generation is then one
// request_timeout_ms wait) and exposes its model lifecycle (list/load/unload/pull) as node commands. Settings come
// from `instance.http`; the factory does no I/O. Every upstream call is tracked so `close()` aborts them all.
import { RunKind, type AdapterInstance, type RunRequest } from '@iop/wire';

import { traceHeaders, type Adapter, type AdapterDeps, type RunOptions } from '../adapter.js';
import { createHttpAdapter } from '../http-adapter.js';
import { joinUrl } from '../http/base-url.js';
import { probeTimeoutMs, readHttpSettings } from '../http/http-settings.js';
import { InflightSet } from '../http/inflight-set.js';
import { readNdjson } from '../http/ndjson-reader.js';
import { upstreamCaller } from '../http/upstream-call.js';
import type { UpstreamExchange } from '../http/upstream-exchange.js';
import type { BackendStream } from '../http/upstream-run.js';
import { createOllamaCommands } from './ollama-commands.js';
import { ollamaEmbedParts } from './ollama-embed.js';
import { asChatLines, toOllamaGenerateRequest } from './ollama-generate.js';
import { listOllamaRunning, listOllamaTags, type OllamaEndpoint } from './ollama-lifecycle.js';
import { fetchImageUrls, toOllamaChatRequest } from './ollama-request.js';
import { ollamaChatParts } from './ollama-stream.js';

export const OLLAMA_DEFAULT_BASE_URL = 'http://127.0.0.1:11434';

export function createOllamaAdapter(instance: AdapterInstance, deps: AdapterDeps): Adapter {
  const settings = readHttpSettings(instance, OLLAMA_DEFAULT_BASE_URL);
  const inflight = new InflightSet();
  const call = upstreamCaller(deps, inflight);
  const endpoint: OllamaEndpoint = {
    url: (path) => joinUrl(settings.baseUrl, path),
    headers: { accept: 'application/json', ...settings.headers },
  };
  const embedUrl = endpoint.url('/api/embed');
  const chatUrl = endpoint.url('/api/chat');
  const generateUrl = endpoint.url('/api/generate');
  const requestSettings = { contextSize: settings.contextSize };

  async function* stream(
    exchange: UpstreamExchange,
    request: RunRequest,
    options: RunOptions,
  ): BackendStream {
    if (request.kind === RunKind.RUN_KIND_EMBEDDING) {
      const headers = { ...endpoint.headers, ...traceHeaders(options) };
      return yield* ollamaEmbedParts(exchange, embedUrl, headers, request);
    }
    const completion = request.kind === RunKind.RUN_KIND_COMPLETION;
    // A chat's remote images are fetched first (fetch_image_urls); a completion has none.
    const body = completion
      ? toOllamaGenerateRequest(request, requestSettings)
      : toOllamaChatRequest(await fetchImageUrls(request, deps.fetchImage, options.signal), requestSettings);
    const response = await exchange.send(completion ? generateUrl : chatUrl, {
      method: 'POST',
      headers: {
        ...endpoint.headers,
        accept: request.collect ? 'application/json' : 'application/x-ndjson',
        ...traceHeaders(options),
      },
      body,
    });
    const lines = readNdjson(exchange.chunks(response));
    return yield* ollamaChatParts(completion ? asChatLines(lines) : lines, request.runId);
  }

  return createHttpAdapter({
    type: 'ollama',
    instance,
    deps,
    settings,
    inflight,
    stream,
    listModels: (signal, idleTimeoutMs) =>
      call(signal, idleTimeoutMs, (exchange) => listOllamaTags(exchange, endpoint)),
    command: createOllamaCommands({ endpoint, call, timeoutMs: settings.requestTimeoutMs, now: deps.now }),
    residentModels: (signal) =>
      call(signal, probeTimeoutMs(settings), (exchange) => listOllamaRunning(exchange, endpoint)),
  });
}
