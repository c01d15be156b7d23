// Answers the edge's NodeCommandRequests. `transport` is answered by the node itself (the link's view), and so
// is `discover` (a forced discovery pass whose NodeDiscovery frame precedes the response on the link);
// `capabilities` comes from the adapter with the node's max_concurrency merged in; provider lifecycle commands
// route by provider_id to that provider's adapter — only the ones in its `lifecycle_capabilities`, the others are
// refused with an error naming what it accepts — and relay progress as ProviderLifecycleProgress envelopes under
// the command's request_id; every other command goes to the adapter named in the request.
//
// Commands never throw to the caller: every failure is a response with ok=false and a clear error.
import {
  create,
  envelope,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type NodeDiscovery,
  type ProviderConfig,
} from '@iop/wire';
import type { Logger } from '@iop/logging';
import type { AdapterSource } from './run-executor.js';
import type { Outbound } from '../link/outbound.js';

export const LIFECYCLE_COMMANDS: readonly string[] = [
  'list_models',
  'load_model',
  'unload_model',
  'pull_model',
];

export interface LinkStatus {
  nodeId: string;
  connected: boolean;
  /** Link state name (`connected` while registered). */
  state: string;
}

export interface CommandRouterDeps {
  adapters: AdapterSource;
  outbound: Outbound;
  logger: Logger;
  maxConcurrency: () => number;
  providers: () => readonly ProviderConfig[];
  linkStatus: () => LinkStatus;
  /** A forced discovery pass; undefined when the node does not discover or has stopped. */
  discover?: () => Promise<{ discovery: NodeDiscovery; sent: boolean } | undefined>;
}

export class CommandRouter {
  readonly #deps: CommandRouterDeps;
  readonly #inFlight = new Set<AbortController>();

  constructor(deps: CommandRouterDeps) {
    this.#deps = deps;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  async handle(requestId: string, request: NodeCommandRequest): Promise<NodeCommandResponse> {
    if (request.command === 'transport') return this.#transport(request);
    if (request.command === 'discover') return this.#discover();
    let adapterName = request.adapter;
    if (LIFECYCLE_COMMANDS.includes(request.command) && request.providerId) {
      const provider = this.#deps.providers().find((candidate) => candidate.id === request.providerId);
      if (!provider) return failure(`unknown provider '${request.providerId}' on this node`);
      // The provider's lifecycle_capabilities say which lifecycle commands it takes; the others are refused here.
      if (!provider.lifecycleCapabilities.includes(request.command)) {
        const allowed = provider.lifecycleCapabilities.join(', ') || 'none';
        return failure(
          `provider '${provider.id}' does not accept '${request.command}' (lifecycle_capabilities: ${allowed})`,
        );
      }
      adapterName = provider.adapter;
    }
    if (!adapterName) return failure(`command '${request.command}' names no adapter`);
    let hold;
    try {
      hold = this.#deps.adapters.acquire(adapterName);
    } catch (error) {
      return failure(errorMessage(error));
    }
    const controller = new AbortController();
    this.#inFlight.add(controller);
    try {
      const response = await hold.adapter.command(request, {
        signal: controller.signal,
        onProgress: (progress) => {
          void this.#deps.outbound.send(envelope.providerLifecycleProgress(requestId, progress));
        },
      });
      if (request.command === 'capabilities' && response.ok) {
        return {
          ...response,
          result: { ...response.result, max_concurrency: String(this.#deps.maxConcurrency()) },
        };
      }
      return response;
    } catch (error) {
      this.#deps.logger.warn(
        { command: request.command, adapter: adapterName, error: errorMessage(error) },
        'node command failed',
      );
      return failure(`${request.command} failed on adapter '${hold.adapter.name}': ${errorMessage(error)}`);
    } finally {
      this.#inFlight.delete(controller);
      hold.release();
    }
  }

  /** Aborts commands still running (shutdown). */
  abortAll(reason: string): void {
    for (const controller of this.#inFlight) controller.abort(reason);
  }

  async #discover(): Promise<NodeCommandResponse> {
    if (!this.#deps.discover) return failure('discovery is not enabled on this node');
    const pass = await this.#deps.discover();
    if (!pass) return failure('discovery stopped before it finished');
    const { discovery } = pass;
    return create.nodeCommandResponse({
      ok: true,
      result: {
        backends: discovery.backends.map((backend) => backend.kind).join(','),
        clis: discovery.clis.map((cli) => cli.name).join(','),
        gpus: String(discovery.host?.gpus.length ?? 0),
        models: String(discovery.backends.reduce((sum, backend) => sum + backend.models.length, 0)),
        reported: String(pass.sent),
      },
    });
  }

  #transport(request: NodeCommandRequest): NodeCommandResponse {
    const status = this.#deps.linkStatus();
    return create.nodeCommandResponse({
      ok: true,
      result: {
        adapter: request.adapter,
        connected: String(status.connected),
        node_id: status.nodeId,
        session_id: request.sessionId,
        state: status.state,
        target: request.target,
      },
    });
  }
}

function failure(error: string): NodeCommandResponse {
  return create.nodeCommandResponse({ ok: false, error });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
