// Assembles one node agent: adapter registry, run executor, command router, health monitor and the link, wired
// together by plain objects. `run()` serves until the link ends (stop, rejection, give-up) and then releases
// everything it built: runs aborted, adapters (and their sessions' processes) closed. The run history is the
// caller's: it is opened before and closed after.
import type { Tracing } from '@iop/tracing';
import os from 'node:os';
import {
  NODE_RUN_KINDS,
  type AdapterDeps,
  type AdapterFactory,
  type AdapterType,
} from '../adapters/adapter.js';
import type { HttpClient } from '../adapters/http/http-client.js';
import { createImageFetcher, type ImageFetcher } from '../adapters/http/image-fetch.js';
import { createNodeHttpClient, type NodeHttpClient } from '../adapters/http/node-http-client.js';
import { AdapterRegistry } from '../adapters/registry.js';
import { DiscoveryReporter } from '../discovery/discovery-reporter.js';
import { NodeDiscoverer } from '../discovery/node-discoverer.js';
import type { ProbeDeps } from '../discovery/probe-deps.js';
import { HealthMonitor } from '../health/health-monitor.js';
import { ResidentMonitor } from '../health/resident-monitor.js';
import type { RunHistory } from '../history/run-history.js';
import { systemClock, type Clock } from '@iop/clock';
import type { ConnectFunction } from '../link/dial.js';
import { EdgeLink, type LinkOutcome, type RegistrationIdentity } from '../link/edge-link.js';
import type { Logger } from '@iop/logging';
import { CommandRouter } from './command-router.js';
import type { Outbound } from '../link/outbound.js';
import { NodeRuntime, NodeSettings } from './node-runtime.js';
import { RunExecutor } from './run-executor.js';
import { ModelCallEndpoints } from '../model-endpoint/model-call-endpoints.js';

export interface NodeAgentOptions {
  nodeId: string;
  token: string;
  /** The node's identity key (proves the node to the edge beyond its token); absent: registers without one. */
  identity?: RegistrationIdentity;
  agentVersion: string;
  connect: ConnectFunction;
  factories: Partial<Record<AdapterType, AdapterFactory>>;
  history: RunHistory;
  logger: Logger;
  clock?: Clock;
  fetch?: typeof fetch;
  /**
   * The HTTP adapters' upstream client. Default: the node's keep-alive HTTP/1.1 client (createNodeHttpClient) owned (and closed) by the agent,
   * unless `fetch` is given, in which case the adapters use that fetch.
   */
  http?: HttpClient;
  /** Fetches remote images for Ollama runs with fetch_image_urls; default createImageFetcher() (public addresses, 20 MiB, 10 s). */
  fetchImage?: ImageFetcher;
  retryIntervalMs?: number;
  maxRetries?: number;
  registerTimeoutMs?: number;
  /** Grace for aborted runs to send their last event at shutdown. */
  shutdownGraceMs?: number;
  /** Spans of runs and backend calls continuing the edge's trace; default off (the traceparent still passes). */
  tracing?: Tracing;
  /** Host facts sent at registration (defaults: this machine). */
  host?: { os: string; arch: string; hostname: string };
  /** What discovery may probe (`systemProbeDeps`); absent = the agent does not discover. */
  discovery?: {
    deps: ProbeDeps;
    httpTimeoutMs?: number;
    execTimeoutMs?: number;
    intervalMs?: number;
  };
}

export class NodeAgent {
  readonly link: EdgeLink;
  readonly registry: AdapterRegistry;
  readonly executor: RunExecutor;
  readonly settings: NodeSettings;
  readonly #commands: CommandRouter;
  readonly #health: HealthMonitor;
  readonly #resident: ResidentMonitor;
  readonly #discovery: DiscoveryReporter | undefined;
  readonly #logger: Logger;
  #running: Promise<LinkOutcome> | undefined;
  #stopping: Promise<void> | undefined;
  /** The client this agent created (and so closes); undefined when one was injected. */
  readonly #ownHttp: NodeHttpClient | undefined;

  constructor(options: NodeAgentOptions) {
    const clock = options.clock ?? systemClock;
    const logger = options.logger;
    this.#logger = logger;
    this.#ownHttp =
      options.http === undefined && options.fetch === undefined ? createNodeHttpClient({ clock }) : undefined;
    // The link is created last (it needs the runtime as handler); everything before sends through this.
    const outbound: Outbound = { send: (message) => this.link.send(message) };
    // Agents' model calls go up the same link (issue 42).
    const modelEndpoints = new ModelCallEndpoints({
      send: (message) => outbound.send(message),
      logger: logger.child({ component: 'model-endpoint' }),
    });
    const adapterDeps: AdapterDeps = {
      modelEndpoints,
      fetch: options.fetch ?? fetch,
      http: options.http ?? this.#ownHttp,
      fetchImage: options.fetchImage ?? createImageFetcher(),
      logger: logger.child({ component: 'adapter' }),
      // Durations (see AdapterDeps.now): the clock's monotonic reading (performance.now() on the system clock);
      // Date.now() would round each backend wait to whole ms. A test clock without one measures with now().
      now: clock.monotonicNow ? clock.monotonicNow.bind(clock) : () => clock.now(),
      clock,
    };
    this.registry = new AdapterRegistry({
      factories: options.factories,
      adapterDeps,
      logger: logger.child({ component: 'registry' }),
    });
    this.settings = new NodeSettings();
    this.executor = new RunExecutor({
      adapters: this.registry,
      outbound,
      history: options.history,
      logger: logger.child({ component: 'runner' }),
      clock,
      maxConcurrency: () => this.settings.maxConcurrency(),
      shutdownGraceMs: options.shutdownGraceMs,
      ...(options.tracing ? { tracing: options.tracing } : {}),
      runEnded: (adapterName) => this.#resident.runEnded(adapterName),
    });
    this.#discovery = options.discovery
      ? new DiscoveryReporter({
          discoverer: new NodeDiscoverer({
            deps: options.discovery.deps,
            now: () => clock.now(),
            httpTimeoutMs: options.discovery.httpTimeoutMs,
            execTimeoutMs: options.discovery.execTimeoutMs,
            warn: (message) => logger.warn({ component: 'discovery' }, message),
            logger: logger.child({ component: 'discovery' }),
          }),
          settings: () => this.settings.discovery(),
          outbound,
          clock,
          logger: logger.child({ component: 'discovery' }),
          intervalMs: options.discovery.intervalMs,
        })
      : undefined;
    const discovery = this.#discovery;
    this.#commands = new CommandRouter({
      adapters: this.registry,
      outbound,
      logger: logger.child({ component: 'commands' }),
      maxConcurrency: () => this.settings.maxConcurrency(),
      providers: () => this.settings.providers(),
      linkStatus: () => this.link.status(),
      ...(discovery ? { discover: () => discovery.request(true) } : {}),
    });
    this.#resident = new ResidentMonitor({
      adapters: this.registry,
      intervalMs: () => this.settings.residentPollIntervalMs(),
      clock,
      logger: logger.child({ component: 'resident' }),
      onChange: () => void this.#health.residentChanged(),
    });
    this.#health = new HealthMonitor({
      adapters: this.registry,
      providers: () => this.settings.providers(),
      intervalMs: () => this.settings.healthProbeIntervalMs(),
      outbound,
      clock,
      logger: logger.child({ component: 'health' }),
      resident: this.#resident,
    });
    const runtime = new NodeRuntime(
      {
        nodeId: options.nodeId,
        registry: this.registry,
        executor: this.executor,
        commands: this.#commands,
        health: this.#health,
        resident: this.#resident,
        outbound,
        modelEndpoints,
        logger: logger.child({ component: 'runtime' }),
        ...(discovery ? { discovery } : {}),
      },
      this.settings,
    );
    const host = options.host ?? { os: process.platform, arch: process.arch, hostname: os.hostname() };
    this.link = new EdgeLink({
      connect: options.connect,
      registration: {
        nodeId: options.nodeId,
        token: options.token,
        ...(options.identity ? { identity: options.identity } : {}),
        agentVersion: options.agentVersion,
        os: host.os,
        arch: host.arch,
        hostname: host.hostname,
        supportedAdapters: this.registry.supportedTypes(),
        runKinds: [...NODE_RUN_KINDS],
      },
      handler: runtime,
      logger: logger.child({ component: 'link' }),
      clock,
      retryIntervalMs: options.retryIntervalMs,
      maxRetries: options.maxRetries,
      registerTimeoutMs: options.registerTimeoutMs,
    });
  }

  /** Serves until the link ends, then releases runs, sessions and adapters. Call once. */
  run(): Promise<LinkOutcome> {
    this.#running ??= (async () => {
      const outcome = await this.link.run();
      await this.#release();
      return outcome;
    })();
    return this.#running;
  }

  /**
   * Clean shutdown: aborts runs while the link is still up (so their last events reach the edge), says Goodbye
   * with `reason`, then closes adapters. Idempotent.
   */
  stop(reason = 'shutdown'): Promise<void> {
    this.#stopping ??= (async () => {
      this.#logger.info({ reason }, 'node stopping');
      this.#commands.abortAll(reason);
      await this.#health.stop();
      await this.#resident.stop();
      await this.#discovery?.stop();
      await this.executor.shutdown(`node ${reason}`);
      await this.link.stop(reason);
      await this.#release();
      if (this.#running) await this.#running;
    })();
    return this.#stopping;
  }

  async #release(): Promise<void> {
    this.#commands.abortAll('node stopped');
    await this.#health.stop();
    await this.#resident.stop();
    await this.#discovery?.stop();
    await this.executor.shutdown('node stopped');
    await this.registry.close();
    this.#ownHttp?.close();
  }
}
