// The shell both HTTP adapters (ollama, openai_compat) share: a run goes through the one upstream run skeleton
// (http/upstream-run.ts) with the adapter's backend stream; `capabilities` is answered here and any other command
// is the adapter's, its failure logged and answered ok=false; health is a cheap listing of the served models;
// sessions are stateless; close() aborts every upstream call in flight. An adapter passes only what differs: how
// a run's request is sent and its answer read, its own commands, how it lists its models.
import type {
  AdapterInstance,
  NodeCommandRequest,
  NodeCommandResponse,
  RunEventPart,
  RunRequest,
} from '@iop/wire';

import {
  ADAPTER_INTERFACE_VERSION,
  type Adapter,
  type AdapterDeps,
  type CommandOptions,
  type HealthProbeResult,
  type RunOptions,
} from './adapter.js';
import { commandFailedLogged, commandOk, commandUnsupported, displayUrl } from './http/command-response.js';
import { probeByListing } from './http/health-probe.js';
import { probeTimeoutMs, type HttpSettings } from './http/http-settings.js';
import type { InflightSet } from './http/inflight-set.js';
import { runUpstream, type UpstreamRunner } from './http/upstream-run.js';

/** The served models as last listed (a healthy probe or `list_models`); `capabilities` reports them. */
export interface KnownModels {
  names: string[];
}

export interface HttpAdapterSpec {
  type: 'ollama' | 'openai_compat';
  instance: AdapterInstance;
  deps: AdapterDeps;
  settings: HttpSettings;
  /** The adapter's upstream calls in flight (its commands' calls are tracked here too). */
  inflight: InflightSet;
  /** Sends one run's request through the exchange and yields its answer's parts; built once per adapter. */
  stream: UpstreamRunner<RunOptions>['stream'];
  /** The names of the models the backend serves (the health probe). */
  listModels(signal: AbortSignal, idleTimeoutMs: number): Promise<string[]>;
  /** The adapter's own commands; undefined for one it does not know. A throw is answered as a failed command. */
  command?(
    request: NodeCommandRequest,
    options: CommandOptions,
    known: KnownModels,
  ): Promise<NodeCommandResponse> | undefined;
  residentModels?: (signal: AbortSignal) => Promise<string[]>;
}

export function createHttpAdapter(spec: HttpAdapterSpec): Adapter {
  const { type, instance, deps, settings, inflight } = spec;
  const runner: UpstreamRunner<RunOptions> = {
    adapterName: instance.name,
    deps,
    inflight,
    idleTimeoutMs: settings.requestTimeoutMs,
    stream: spec.stream,
  };
  const known: KnownModels = { names: [] };

  const command = async (
    request: NodeCommandRequest,
    options: CommandOptions,
  ): Promise<NodeCommandResponse> => {
    try {
      if (request.command === 'capabilities') {
        return commandOk({
          adapter: type,
          targets: known.names.join(','),
          base_url: displayUrl(settings.baseUrl),
          provider: settings.provider || type,
        });
      }
      const answer = spec.command?.(request, options, known);
      return answer ? await answer : commandUnsupported(request.command, type);
    } catch (error) {
      return commandFailedLogged(
        { logger: deps.logger, adapterName: instance.name, adapterType: type, command: request.command },
        error,
      );
    }
  };

  const adapter: Adapter = {
    interfaceVersion: ADAPTER_INTERFACE_VERSION,
    name: instance.name,
    type,

    run(request: RunRequest, options: RunOptions): AsyncIterable<RunEventPart> {
      return runUpstream(runner, request, options.signal, options);
    },

    command,

    terminateSession(): Promise<boolean> {
      // Requests to an HTTP backend are stateless: there is no session to end.
      return Promise.resolve(false);
    },

    async probeHealth(signal: AbortSignal): Promise<HealthProbeResult> {
      const result = await probeByListing(() => spec.listModels(signal, probeTimeoutMs(settings)));
      if (result.health === 'healthy') known.names = result.models;
      return result;
    },

    close(): Promise<void> {
      inflight.closeAll(`adapter ${instance.name} closed`);
      return Promise.resolve();
    },
  };
  if (spec.residentModels) adapter.residentModels = spec.residentModels;
  return adapter;
}
