// The `ollama` adapter: runs chat requests against Ollama's native API (streaming NDJSON upstream, or one JSON
// body with `stream: false` for a run whose caller collects the whole answer, `RunRequest.collect`; that body is
// the stream's final line with the whole message, read by the same parser, and the whole generation is then one
// request_timeout_ms wait) and exposes its model lifecycle (list/load/unload/pull) as node commands. Settings come
// from `instance.http`; the factory does no I/O. Every upstream call is tracked so `close()` aborts them all.
import {
  RunKind,
  type AdapterInstance,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type RunRequest,
  type RunEventPart,
} from '@iop/wire';

import {
  ADAPTER_INTERFACE_VERSION,
  type Adapter,
  type AdapterDeps,
  type CommandOptions,
  type HealthProbeResult,
  type RunOptions,
  traceHeaders,
} from '../adapter.js';
import { joinUrl } from '../http/base-url.js';
import {
  commandFailedLogged,
  commandInvalid,
  commandOk,
  commandUnsupported,
  displayUrl,
} from '../http/command-response.js';
import { probeByListing } from '../http/health-probe.js';
import { readHttpSettings, probeTimeoutMs } from '../http/http-settings.js';
import { InflightSet } from '../http/inflight-set.js';
import { readNdjson } from '../http/ndjson-reader.js';
import { callUpstream } from '../http/upstream-call.js';
import { runUpstream } from '../http/upstream-run.js';
import {
  keepAliveArg,
  listOllamaModels,
  listOllamaRunning,
  listOllamaTags,
  pullOllamaModel,
  setOllamaModelLoaded,
  type OllamaEndpoint,
} from './ollama-lifecycle.js';
import { ollamaEmbedParts } from './ollama-embed.js';
import { asChatLines, toOllamaGenerateRequest } from './ollama-generate.js';
import { fetchImageUrls, toOllamaChatRequest } from './ollama-request.js';
import { ollamaChatParts } from './ollama-stream.js';

export const OLLAMA_DEFAULT_BASE_URL = 'http://127.0.0.1:11434';

export function createOllamaAdapter(instance: AdapterInstance, deps: AdapterDeps): Adapter {
  const settings = readHttpSettings(instance, OLLAMA_DEFAULT_BASE_URL);
  const inflight = new InflightSet();
  const endpoint: OllamaEndpoint = {
    url: (path) => joinUrl(settings.baseUrl, path),
    headers: { accept: 'application/json', ...settings.headers },
  };
  /** Served models from the last successful listing (for `capabilities`). */
  let knownModels: string[] = [];
  const call = <T>(signal: AbortSignal, idleTimeoutMs: number, fn: Parameters<typeof callUpstream<T>>[1]) =>
    callUpstream({ deps, inflight, signal, idleTimeoutMs }, fn);

  const modelOf = (request: NodeCommandRequest): string => request.target || request.args.model || '';

  const command = async (
    request: NodeCommandRequest,
    options: CommandOptions,
  ): Promise<NodeCommandResponse> => {
    const providerId = request.providerId;
    const timeout = settings.requestTimeoutMs;
    try {
      switch (request.command) {
        case 'capabilities':
          return commandOk({
            adapter: 'ollama',
            targets: knownModels.join(','),
            base_url: displayUrl(settings.baseUrl),
            provider: settings.provider || 'ollama',
          });
        case 'list_models': {
          const models = await call(options.signal, timeout, (exchange) =>
            listOllamaModels(exchange, endpoint),
          );
          knownModels = models.map((model) => model.name);
          return commandOk(
            {
              models: knownModels.join(','),
              loaded: models
                .filter((model) => model.loaded)
                .map((model) => model.name)
                .join(','),
              count: String(models.length),
            },
            { providerId, action: 'list_models', models, status: 'ok' },
          );
        }
        case 'load_model':
        case 'unload_model': {
          const model = modelOf(request);
          if (model === '') return commandInvalid(`${request.command} needs a model (target or args.model)`);
          const unload = request.command === 'unload_model';
          const keepAlive = unload ? 0 : keepAliveArg(request.args.keep_alive);
          const reason = await call(options.signal, timeout, (exchange) =>
            setOllamaModelLoaded(exchange, endpoint, model, keepAlive),
          );
          const status = unload ? 'unloaded' : 'loaded';
          return commandOk(
            { model, status, done_reason: reason },
            {
              providerId,
              action: request.command,
              models: [{ name: model, sizeBytes: 0, digest: '', loaded: !unload, expiresAt: '' }],
              status,
            },
          );
        }
        case 'pull_model': {
          const model = modelOf(request);
          if (model === '') return commandInvalid('pull_model needs a model (target or args.model)');
          let updates = 0;
          await call(options.signal, timeout, (exchange) =>
            pullOllamaModel(
              exchange,
              endpoint,
              model,
              providerId,
              (progress) => {
                updates += 1;
                options.onProgress?.(progress);
              },
              deps.now,
            ),
          );
          if (!knownModels.includes(model)) knownModels = [...knownModels, model];
          return commandOk(
            { model, status: 'success', progress_updates: String(updates) },
            {
              providerId,
              action: 'pull_model',
              models: [{ name: model, sizeBytes: 0, digest: '', loaded: false, expiresAt: '' }],
              status: 'success',
            },
          );
        }
        default:
          return commandUnsupported(request.command, 'ollama');
      }
    } catch (error) {
      return commandFailedLogged(
        { logger: deps.logger, adapterName: instance.name, adapterType: 'ollama', command: request.command },
        error,
      );
    }
  };

  return {
    interfaceVersion: ADAPTER_INTERFACE_VERSION,
    name: instance.name,
    type: 'ollama',

    run(request: RunRequest, options: RunOptions): AsyncIterable<RunEventPart> {
      return runUpstream({
        adapterName: instance.name,
        request,
        signal: options.signal,
        deps,
        inflight,
        idleTimeoutMs: settings.requestTimeoutMs,
        stream: async function* (exchange) {
          if (request.kind === RunKind.RUN_KIND_EMBEDDING) {
            const headers = { ...endpoint.headers, ...traceHeaders(options) };
            return yield* ollamaEmbedParts(exchange, endpoint.url('/api/embed'), headers, request);
          }
          const completion = request.kind === RunKind.RUN_KIND_COMPLETION;
          const requestSettings = { contextSize: settings.contextSize };
          // A chat's remote images are fetched first (fetch_image_urls); a completion has none.
          const body = completion
            ? toOllamaGenerateRequest(request, requestSettings)
            : toOllamaChatRequest(
                await fetchImageUrls(request, deps.fetchImage, options.signal),
                requestSettings,
              );
          const response = await exchange.send(endpoint.url(completion ? '/api/generate' : '/api/chat'), {
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
        },
      });
    },

    command,

    terminateSession(): Promise<boolean> {
      // Ollama requests are stateless: there is no session to end.
      return Promise.resolve(false);
    },

    async probeHealth(signal: AbortSignal): Promise<HealthProbeResult> {
      const result = await probeByListing(() =>
        call(signal, probeTimeoutMs(settings), (exchange) => listOllamaTags(exchange, endpoint)),
      );
      if (result.health === 'healthy') knownModels = result.models;
      return result;
    },

    residentModels(signal: AbortSignal): Promise<string[]> {
      return call(signal, probeTimeoutMs(settings), (exchange) => listOllamaRunning(exchange, endpoint));
    },

    close(): Promise<void> {
      inflight.closeAll(`adapter ${instance.name} closed`);
      return Promise.resolve();
    },
  };
}
