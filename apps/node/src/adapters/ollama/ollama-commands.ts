// The `ollama` adapter's model lifecycle as node commands: list_models, load_model / unload_model (a generate
// call with keep_alive) and pull_model (progress relayed as it comes). `capabilities` and unknown commands are
// the HTTP adapter shell's (http-adapter.ts).
import type { NodeCommandRequest, NodeCommandResponse } from '@iop/wire';

import type { CommandOptions } from '../adapter.js';
import type { KnownModels } from '../http-adapter.js';
import { commandInvalid, commandOk } from '../http/command-response.js';
import type { UpstreamCaller } from '../http/upstream-call.js';
import {
  keepAliveArg,
  listOllamaModels,
  pullOllamaModel,
  setOllamaModelLoaded,
  type OllamaEndpoint,
} from './ollama-lifecycle.js';

export interface OllamaCommandContext {
  endpoint: OllamaEndpoint;
  call: UpstreamCaller;
  /** request_timeout_ms: each command call's bound of silence. */
  timeoutMs: number;
  now: () => number;
}

export type OllamaCommands = (
  request: NodeCommandRequest,
  options: CommandOptions,
  known: KnownModels,
) => Promise<NodeCommandResponse> | undefined;

export function createOllamaCommands(context: OllamaCommandContext): OllamaCommands {
  return (request, options, known) => {
    switch (request.command) {
      case 'list_models':
        return listModels(context, request, options, known);
      case 'load_model':
      case 'unload_model':
        return setLoaded(context, request, options);
      case 'pull_model':
        return pull(context, request, options, known);
      default:
        return undefined;
    }
  };
}

function modelOf(request: NodeCommandRequest): string {
  return request.target || request.args.model || '';
}

async function listModels(
  { endpoint, call, timeoutMs }: OllamaCommandContext,
  request: NodeCommandRequest,
  options: CommandOptions,
  known: KnownModels,
): Promise<NodeCommandResponse> {
  const models = await call(options.signal, timeoutMs, (exchange) => listOllamaModels(exchange, endpoint));
  known.names = models.map((model) => model.name);
  return commandOk(
    {
      models: known.names.join(','),
      loaded: models
        .filter((model) => model.loaded)
        .map((model) => model.name)
        .join(','),
      count: String(models.length),
    },
    { providerId: request.providerId, action: 'list_models', models, status: 'ok' },
  );
}

async function setLoaded(
  { endpoint, call, timeoutMs }: OllamaCommandContext,
  request: NodeCommandRequest,
  options: CommandOptions,
): Promise<NodeCommandResponse> {
  const model = modelOf(request);
  if (model === '') return commandInvalid(`${request.command} needs a model (target or args.model)`);
  const unload = request.command === 'unload_model';
  const keepAlive = unload ? 0 : keepAliveArg(request.args.keep_alive);
  const reason = await call(options.signal, timeoutMs, (exchange) =>
    setOllamaModelLoaded(exchange, endpoint, model, keepAlive),
  );
  const status = unload ? 'unloaded' : 'loaded';
  return commandOk(
    { model, status, done_reason: reason },
    {
      providerId: request.providerId,
      action: request.command,
      models: [{ name: model, sizeBytes: 0, digest: '', loaded: !unload, expiresAt: '' }],
      status,
    },
  );
}

async function pull(
  { endpoint, call, timeoutMs, now }: OllamaCommandContext,
  request: NodeCommandRequest,
  options: CommandOptions,
  known: KnownModels,
): Promise<NodeCommandResponse> {
  const model = modelOf(request);
  if (model === '') return commandInvalid('pull_model needs a model (target or args.model)');
  let updates = 0;
  await call(options.signal, timeoutMs, (exchange) =>
    pullOllamaModel(
      exchange,
      endpoint,
      model,
      request.providerId,
      (progress) => {
        updates += 1;
        options.onProgress?.(progress);
      },
      now,
    ),
  );
  if (!known.names.includes(model)) known.names = [...known.names, model];
  return commandOk(
    { model, status: 'success', progress_updates: String(updates) },
    {
      providerId: request.providerId,
      action: 'pull_model',
      models: [{ name: model, sizeBytes: 0, digest: '', loaded: false, expiresAt: '' }],
      status: 'success',
    },
  );
}
