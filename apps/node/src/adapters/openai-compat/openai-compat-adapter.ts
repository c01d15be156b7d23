// The `openai_compat` adapter: runs chat requests against an OpenAI-compatible server (vLLM or generic) over
// `/v1/chat/completions` and lists served models via `/v1/models`. A run streams SSE upstream (with usage), except
// one whose caller collects the whole answer (`RunRequest.collect`: a non-streaming OpenAI request, a blocking A2A
// message/send), which asks for `stream: false` and turns the one JSON body into the same parts: no SSE framing
// and parsing on either side for an answer nobody reads incrementally. For such a run the whole generation is one
// silent wait, so request_timeout_ms bounds the whole answer (for a streamed run it bounds each gap).
// Configured headers (e.g. Authorization) go on every call. The factory does no I/O; `close()` aborts every
// upstream call in flight.
import { RunKind, type AdapterInstance, type NodeCommandRequest, type RunRequest } from '@iop/wire';

import {
  traceHeaders,
  type Adapter,
  type AdapterDeps,
  type CommandOptions,
  type RunOptions,
} from '../adapter.js';
import { createHttpAdapter, type KnownModels } from '../http-adapter.js';
import { joinUrl, openAIApiBase } from '../http/base-url.js';
import { commandOk } from '../http/command-response.js';
import { readHttpSettings } from '../http/http-settings.js';
import { InflightSet } from '../http/inflight-set.js';
import { readSseBatches } from '../http/sse-reader.js';
import { upstreamCaller } from '../http/upstream-call.js';
import type { UpstreamExchange } from '../http/upstream-exchange.js';
import type { BackendStream } from '../http/upstream-run.js';
import { listOpenAIModels, toModelInfo } from './openai-models.js';
import { openAIEmbeddingsParts } from './openai-embed.js';
import { toOpenAIChatRequest } from './openai-request.js';
import { openAIChatParts, openAICompletionParts } from './openai-stream.js';
import {
  asChatChunkBatches,
  asChatCompletionBody,
  toOpenAITextCompletionRequest,
} from './openai-text-completion.js';

export const OPENAI_COMPAT_DEFAULT_BASE_URL = 'http://127.0.0.1:8000/v1';

export function createOpenAICompatAdapter(instance: AdapterInstance, deps: AdapterDeps): Adapter {
  const settings = readHttpSettings(instance, OPENAI_COMPAT_DEFAULT_BASE_URL);
  const apiBase = openAIApiBase(settings.baseUrl);
  const inflight = new InflightSet();
  const call = upstreamCaller(deps, inflight);
  const headers = { accept: 'application/json', ...settings.headers };
  const sseHeaders = { ...headers, accept: 'text/event-stream' };
  const modelsUrl = joinUrl(apiBase, '/models');
  const chatUrl = joinUrl(apiBase, '/chat/completions');
  const embeddingsUrl = joinUrl(apiBase, '/embeddings');
  const completionsUrl = joinUrl(apiBase, '/completions');
  const listModels = (signal: AbortSignal, idleTimeoutMs: number) =>
    call(signal, idleTimeoutMs, (exchange) => listOpenAIModels(exchange, modelsUrl, headers));

  async function* stream(
    exchange: UpstreamExchange,
    request: RunRequest,
    options: RunOptions,
  ): BackendStream {
    if (request.kind === RunKind.RUN_KIND_EMBEDDING) {
      const embedHeaders = options.traceparent ? { ...headers, ...traceHeaders(options) } : headers;
      return yield* openAIEmbeddingsParts(exchange, embeddingsUrl, embedHeaders, request);
    }
    const completion = request.kind === RunKind.RUN_KIND_COMPLETION;
    const body = completion
      ? toOpenAITextCompletionRequest(request)
      : toOpenAIChatRequest(request, { provider: settings.provider });
    const base = request.collect ? headers : sseHeaders;
    const response = await exchange.send(completion ? completionsUrl : chatUrl, {
      method: 'POST',
      // send() copies the headers: the shared object is never changed.
      headers: options.traceparent ? { ...base, ...traceHeaders(options) } : base,
      body,
    });
    // Whatever was asked, the answer's content type decides how it is read (some servers ignore `stream`).
    if (response.header('content-type')?.includes('application/json')) {
      const answer = await exchange.json(response);
      return yield* openAICompletionParts(completion ? asChatCompletionBody(answer) : answer, request.runId);
    }
    const batches = readSseBatches(exchange.chunks(response));
    return yield* openAIChatParts(completion ? asChatChunkBatches(batches) : batches, request.runId);
  }

  async function listModelsCommand(request: NodeCommandRequest, options: CommandOptions, known: KnownModels) {
    const models = await listModels(options.signal, settings.requestTimeoutMs);
    known.names = models.map((model) => model.id);
    return commandOk(
      {
        models: known.names.join(','),
        count: String(models.length),
        max_model_len: models.map((model) => `${model.id}=${model.maxModelLen}`).join(','),
      },
      {
        providerId: request.providerId,
        action: 'list_models',
        models: models.map(toModelInfo),
        status: 'ok',
      },
    );
  }

  return createHttpAdapter({
    type: 'openai_compat',
    instance,
    deps,
    settings,
    inflight,
    stream,
    listModels: async (signal, idleTimeoutMs) =>
      (await listModels(signal, idleTimeoutMs)).map((model) => model.id),
    command: (request, options, known) =>
      request.command === 'list_models' ? listModelsCommand(request, options, known) : undefined,
  });
}
