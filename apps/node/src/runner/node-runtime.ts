// What the node does with the edge's messages: applies the config payload (on registration and on refresh),
// hands runs and cancels to the RunExecutor, answers commands through the CommandRouter, and keeps the health
// monitor going. It is the link's handler; it owns none of the I/O (the link sends, the adapters run).
//
// Config refresh: the adapter registry is rebuilt (unchanged instances kept, in-flight runs keep running,
// removed instances closed after their runs end) and the result is answered under the request's id.
//
// Discovery (when the agent has it): a pass is requested after every registration (forced, so a new edge link
// learns it) and after every applied refresh; it runs in the background and never holds up either.
import type { ModelCallEndpoints } from '../model-endpoint/model-call-endpoints.js';
import {
  envelope,
  type CancelRequest,
  type DiscoverySettings,
  type NodeCommandRequest,
  type NodeConfigPayload,
  type NodeConfigRefreshRequest,
  type ProviderConfig,
  type RegisterResponse,
  type RunRequest,
} from '@iop/wire';
import type { AdapterRegistry } from '../adapters/registry.js';
import type { DiscoveryReporter } from '../discovery/discovery-reporter.js';
import type { HealthMonitor } from '../health/health-monitor.js';
import { DEFAULT_RESIDENT_POLL_INTERVAL_MS, type ResidentMonitor } from '../health/resident-monitor.js';
import type { LinkHandler } from '../link/edge-link.js';
import type { Logger } from '@iop/logging';
import type { CommandRouter } from './command-router.js';
import type { Outbound } from '../link/outbound.js';
import type { RunExecutor } from './run-executor.js';

export interface NodeRuntimeDeps {
  nodeId: string;
  registry: AdapterRegistry;
  executor: RunExecutor;
  commands: CommandRouter;
  health: HealthMonitor;
  /** Loaded models of the backends (reported with health); absent = not asked (tests, embedders). */
  resident?: ResidentMonitor;
  outbound: Outbound;
  logger: Logger;
  /** Absent = this agent does not discover (tests, embedders). */
  discovery?: DiscoveryReporter;
  /** Agents' model endpoints (issue 42); absent = the edge's model-call frames are ignored. */
  modelEndpoints?: ModelCallEndpoints;
}

/** The part of the payload the runner reads while running (replaced as a whole on apply). */
export class NodeSettings {
  #payload: NodeConfigPayload | undefined;

  get payload(): NodeConfigPayload | undefined {
    return this.#payload;
  }

  set payload(next: NodeConfigPayload | undefined) {
    this.#payload = next;
  }

  maxConcurrency(): number {
    return this.#payload?.maxConcurrency ?? 0;
  }

  providers(): readonly ProviderConfig[] {
    return this.#payload?.providers ?? [];
  }

  healthProbeIntervalMs(): number {
    return this.#payload?.healthProbeIntervalMs ?? 0;
  }

  /** `resident_poll_interval_ms`: the payload's, or the default when absent (no payload yet, an older edge). */
  residentPollIntervalMs(): number {
    return this.#payload?.residentPollIntervalMs ?? DEFAULT_RESIDENT_POLL_INTERVAL_MS;
  }

  /** Undefined until a payload arrives, or when the edge predates discovery settings. */
  discovery(): DiscoverySettings | undefined {
    return this.#payload?.discovery;
  }
}

export class NodeRuntime implements LinkHandler {
  readonly settings: NodeSettings;
  readonly #deps: NodeRuntimeDeps;

  constructor(deps: NodeRuntimeDeps, settings: NodeSettings) {
    this.#deps = deps;
    this.settings = settings;
  }

  registered(response: RegisterResponse, context: { reconnect: boolean }): void {
    const config = response.config;
    if (config) {
      const error = this.#apply(config);
      if (error) this.#deps.logger.error({ revision: config.revision, error }, 'config payload not applied');
    } else {
      this.#deps.logger.warn({}, 'edge sent no config payload; keeping the current adapters');
    }
    this.#deps.health.start();
    this.#deps.resident?.start();
    this.#deps.health.requestFullReport();
    if (this.#deps.discovery) {
      this.#deps.discovery.start();
      void this.#deps.discovery.request(true);
    }
    this.#deps.logger.info(
      {
        reconnect: context.reconnect,
        alias: config?.alias ?? '',
        adapters: this.#deps.registry.list().map((adapter) => adapter.name),
        maxConcurrency: this.settings.maxConcurrency(),
      },
      'node ready',
    );
  }

  runRequest(request: RunRequest): void {
    this.#deps.executor.submit(request);
  }

  cancelRequest(request: CancelRequest): void {
    void this.#deps.executor.cancel(request);
  }

  nodeCommandRequest(requestId: string, request: NodeCommandRequest): void {
    void this.#deps.commands
      .handle(requestId, request)
      .then((response) => this.#deps.outbound.send(envelope.nodeCommandResponse(requestId, response)))
      .catch((error: unknown) =>
        this.#deps.logger.error({ requestId, error: String(error) }, 'node command could not be answered'),
      );
  }

  nodeConfigRefreshRequest(requestId: string, request: NodeConfigRefreshRequest): void {
    const config = request.config;
    const error = config ? this.#apply(config) : 'refresh request without a config payload';
    if (error) this.#deps.logger.warn({ revision: config?.revision ?? '', error }, 'config refresh rejected');
    else this.#deps.logger.info({ revision: config?.revision ?? '' }, 'config refreshed');
    if (!error) this.#deps.health.requestFullReport();
    if (!error) void this.#deps.discovery?.request(false);
    void this.#deps.outbound.send(
      envelope.nodeConfigRefreshResult(requestId, {
        revision: config?.revision ?? '',
        ok: !error,
        error: error ?? '',
      }),
    );
  }

  modelCallData(callId: string, data: Uint8Array): void {
    this.#deps.modelEndpoints?.data(callId, data);
  }

  modelCallClose(callId: string, reason: string): void {
    this.#deps.modelEndpoints?.close(callId, reason);
  }

  disconnected(reason: string): void {
    this.#deps.modelEndpoints?.linkLost();
    // The edge ends every run of a lost node on its side; finishing them here frees the slots and sessions' turns.
    this.#deps.executor.abortAll('link-lost', `edge link lost (${reason})`);
    this.#deps.commands.abortAll(`edge link lost (${reason})`);
  }

  /** Applies a payload; returns an error message (nothing changed) or undefined. */
  #apply(config: NodeConfigPayload): string | undefined {
    if (config.nodeId && config.nodeId !== this.#deps.nodeId) {
      return `config payload is for node '${config.nodeId}', this node is '${this.#deps.nodeId}'`;
    }
    try {
      this.#deps.registry.apply(config.adapters);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
    this.settings.payload = config;
    return undefined;
  }
}
