// Prometheus metrics of the edge (prom-client, one registry per edge). Hot paths only increment counters and
// observe histograms; per-provider gauges are read from the pool's snapshot at scrape time, so dispatch code
// never updates them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isTerminalPart } from '@iop/wire';
import type { EventBus } from '../events/types.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { CellHistogram } from './cell-histogram.js';
import { cellCounter, type CounterCells } from './counter-cells.js';
import { LineCachedCounter } from './line-cached-counter.js';

export interface ProviderGaugeSample {
  providerId: string;
  nodeId: string;
  capacity: number;
  inFlight: number;
  queued: number;
  /** The provider's one health state; `open` / `half_open` are its circuit (iop_provider_circuit_state). */
  health?: string;
}

/** iop_provider_circuit_state: 0 closed, 1 open, 2 half_open. */
function circuitValue(health: string | undefined): number {
  if (health === 'open') return 1;
  return health === 'half_open' ? 2 : 0;
}

/** Runs on one node against its max_concurrency (pool.nodeLoads()). */
export interface NodeLoadSample {
  nodeId: string;
  inFlight: number;
  maxConcurrency: number;
}

export interface EdgeMetricsOptions {
  /** Read at scrape time for the per-provider gauges. */
  providerSnapshot?: () => ProviderGaugeSample[];
  /** Read at scrape time for the per-node admission gauges. */
  nodeLoads?: () => NodeLoadSample[];
  /** Read at scrape time for the connected-node gauge. */
  connectedNodes?: () => number;
  /** Read at scrape time for the discovery gauges: each connected node's latest discovery report. */
  discoveredNodes?: () => readonly { nodeId: string; discovered?: NodeDiscovered }[];
  /** Also export the Node.js process metrics (memory, event loop lag, ...). */
  processMetrics?: boolean;
}

const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

export class EdgeMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'surface' | 'route' | 'status'>;
  /** Per-request histograms: CellHistograms (same exposition as prom-client's; see cell-histogram.ts). */
  readonly httpRequestSeconds: CellHistogram<'surface' | 'route'>;
  readonly timeToFirstTokenSeconds: CellHistogram<'surface'>;
  readonly overheadSeconds: CellHistogram<'surface'>;
  readonly providerDispatches: Counter<'provider' | 'node'>;
  readonly providerRejections: Counter<'model' | 'reason'>;
  /** Model runs dispatched to a provider whose node reported the model not loaded (Ollama /api/ps). */
  readonly modelColdLoads: Counter<'provider'>;
  readonly runsAdmitted: Counter<'surface'>;
  readonly runsRejected: Counter<'surface' | 'reason'>;
  /** Runs placed again after a dispatch failure before their first output, by surface and reason. */
  readonly runRetries: Counter<'surface' | 'reason'>;
  readonly childRuns: Counter<'result'>;
  /** How long dispatched child runs waited for capacity of their model (the agents' queue wait). */
  readonly childQueueWaitSeconds: Histogram<'model'>;
  /**
   * Per-node counters: a series for every node that ever connected, 10,000s on a large fleet. They keep their
   * exposition lines (line-cached-counter.ts) and are appended to the registry's page, so a scrape does not spend
   * ~10 µs per unchanged series on them.
   */
  readonly nodeConnections: LineCachedCounter<'node'>;
  readonly nodeDisconnects: LineCachedCounter<'node' | 'reason'>;
  readonly runOutcomes: Counter<'outcome'>;
  /** Model runs with an affinity key, by how their placement went (hit, miss, spill). */
  readonly affinityResults: Counter<'result'>;
  readonly frameErrors: Counter<'code'>;
  /** Hot-path cells of the per-request counters (same series as the counters above; see counter-cells.ts). */
  readonly cells: {
    readonly httpRequests: CounterCells<'surface' | 'route' | 'status'>;
    readonly providerDispatches: CounterCells<'provider' | 'node'>;
    readonly runsAdmitted: CounterCells<'surface'>;
    readonly runOutcomes: CounterCells<'outcome'>;
  };

  constructor(options: EdgeMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.processMetrics)
      collectDefaultMetrics({ register: this.registry, prefix: 'iop_edge_process_' });
    const httpRequests = cellCounter({
      name: 'iop_http_requests_total',
      help: 'HTTP requests answered, by surface, route and status code.',
      labelNames: ['surface', 'route', 'status'] as const,
      registers,
    });
    this.httpRequests = httpRequests.counter;
    this.httpRequestSeconds = new CellHistogram({
      name: 'iop_http_request_duration_seconds',
      help: 'Time from request to the end of the response (whole stream for streaming responses).',
      labelNames: ['surface', 'route'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.timeToFirstTokenSeconds = new CellHistogram({
      name: 'iop_time_to_first_token_seconds',
      help: 'Time from request to the first generated token sent to the client.',
      labelNames: ['surface'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.overheadSeconds = new CellHistogram({
      name: 'iop_overhead_seconds',
      help: 'Time spent inside the edge and node for a request, excluding the backend (x-iop-overhead-ms).',
      labelNames: ['surface'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    const providerDispatches = cellCounter({
      name: 'iop_provider_dispatches_total',
      help: 'Runs dispatched to a provider.',
      labelNames: ['provider', 'node'] as const,
      registers,
    });
    this.providerDispatches = providerDispatches.counter;
    this.providerRejections = new Counter({
      name: 'iop_provider_rejections_total',
      help: 'Requests the pool could not place, by model and reason (queue_full, queue_timeout, no_provider).',
      labelNames: ['model', 'reason'],
      registers,
    });
    this.modelColdLoads = new Counter({
      name: 'iop_model_cold_loads_total',
      help: 'Model runs dispatched to a provider whose node reported the model not loaded (a cold load), by provider.',
      labelNames: ['provider'],
      registers,
    });
    const runsAdmitted = cellCounter({
      name: 'iop_runs_admitted_total',
      help: 'Runs admitted and sent to a node, by surface (openai, a2a, console, admin, ui).',
      labelNames: ['surface'] as const,
      registers,
    });
    this.runsAdmitted = runsAdmitted.counter;
    this.runsRejected = new Counter({
      name: 'iop_runs_rejected_total',
      help: 'Runs admission refused for lack of capacity, by surface and reason (queue_full, queue_timeout, no_provider).',
      labelNames: ['surface', 'reason'],
      registers,
    });
    this.runRetries = new Counter({
      name: 'iop_run_retries_total',
      help: 'Runs placed again on another provider after a dispatch failure before their first output, by surface and reason (upstream_unreachable, upstream_timeout, upstream_error, upstream_5xx, upstream_429, node_busy, node_lost).',
      labelNames: ['surface', 'reason'],
      registers,
    });
    this.childRuns = new Counter({
      name: 'iop_child_runs_total',
      help: "Child runs (an agent's model calls) by how they ended: completed, error, cancelled, or rejected (refused before they started: parent not live, limits, capacity).",
      labelNames: ['result'],
      registers,
    });
    this.childQueueWaitSeconds = new Histogram({
      name: 'iop_child_queue_wait_seconds',
      help: "Time a child run (an agent's model call) waited for capacity of its model before it was dispatched, all attempts together, by model.",
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.nodeConnections = new LineCachedCounter({
      name: 'iop_node_connections_total',
      help: 'Accepted node registrations.',
      labelNames: ['node'],
    });
    this.nodeDisconnects = new LineCachedCounter({
      name: 'iop_node_disconnects_total',
      help: 'Node disconnections by reason.',
      labelNames: ['node', 'reason'],
    });
    const runOutcomes = cellCounter({
      name: 'iop_run_outcomes_total',
      help: 'Finished runs by outcome (completed, error, cancelled).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.runOutcomes = runOutcomes.counter;
    this.cells = {
      httpRequests: httpRequests.cells,
      providerDispatches: providerDispatches.cells,
      runsAdmitted: runsAdmitted.cells,
      runOutcomes: runOutcomes.cells,
    };
    this.affinityResults = new Counter({
      name: 'iop_affinity_total',
      help: 'Model runs with a conversation affinity key by placement result: hit (the provider that served the key last), miss (no usable entry), spill (that provider was busy).',
      labelNames: ['result'],
      registers,
    });
    this.frameErrors = new Counter({
      name: 'iop_frame_errors_total',
      help: 'Connections closed for bad frames, by wire error code.',
      labelNames: ['code'],
      registers,
    });
    registerProviderGauges(registers, options.providerSnapshot);
    registerNodeGauges(registers, options.nodeLoads);
    registerNodeDiscoveryGauges(registers, options.discoveredNodes, options.connectedNodes);
  }

  /** Counts node lifecycle and run outcomes from the event bus; returns the unsubscribe function. */
  followEvents(events: EventBus): () => void {
    // Only what is counted: node lifecycle and each run's terminal event, not every streamed part.
    const subscription = events.subscribe({
      filter: (event) => event.type === 'node' || isTerminalPart(event.event.part),
    });
    const completed = this.cells.runOutcomes.cell('completed');
    const failed = this.cells.runOutcomes.cell('error');
    const cancelled = this.cells.runOutcomes.cell('cancelled');
    void (async () => {
      for await (const event of subscription) {
        if (event.type === 'node') {
          const { kind, nodeId, reason } = event.event;
          if (kind === 'connected') this.nodeConnections.inc({ node: nodeId });
          else if (kind === 'disconnected') this.nodeDisconnects.inc({ node: nodeId, reason });
          continue;
        }
        const part = event.event.part;
        if (part.type === 'complete') completed.inc();
        else if (part.type === 'error') failed.inc();
        else if (part.type === 'cancelled') cancelled.inc();
      }
    })();
    return () => subscription.close();
  }

  /** The text exposition format. */
  async render(): Promise<{ contentType: string; body: string }> {
    // Each part ends with a newline; a blank line separates metrics, as within the registry's page.
    const body = [
      await this.registry.metrics(),
      this.nodeConnections.render(),
      this.nodeDisconnects.render(),
    ].join('\n');
    return { contentType: this.registry.contentType, body };
  }
}

/** Per-provider gauges read from the pool at scrape time. */
function registerProviderGauges(
  registers: Registry[],
  providerSnapshot: EdgeMetricsOptions['providerSnapshot'],
): void {
  const providerGauge = (name: string, help: string, pick: (sample: ProviderGaugeSample) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['provider', 'node'],
      registers,
      collect() {
        this.reset();
        for (const sample of providerSnapshot?.() ?? []) {
          this.set({ provider: sample.providerId, node: sample.nodeId }, pick(sample));
        }
      },
    });
  };
  providerGauge('iop_provider_in_flight', 'Runs in flight per provider.', (sample) => sample.inFlight);
  providerGauge(
    'iop_provider_queued',
    'Requests waiting for a provider of the model.',
    (sample) => sample.queued,
  );
  providerGauge(
    'iop_provider_circuit_state',
    'Circuit of each provider (passive health): 0 closed, 1 open (skipped after dispatch failures), 2 half_open (one probe run).',
    (sample) => circuitValue(sample.health),
  );
  providerGauge(
    'iop_provider_capacity',
    'Configured capacity per provider (0 when disabled).',
    (s) => s.capacity,
  );
}

/** Per-node load gauges read from the pool at scrape time. */
function registerNodeGauges(registers: Registry[], nodeLoads: EdgeMetricsOptions['nodeLoads']): void {
  const nodeGauge = (name: string, help: string, pick: (sample: NodeLoadSample) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        for (const sample of nodeLoads?.() ?? []) this.set({ node: sample.nodeId }, pick(sample));
      },
    });
  };
  nodeGauge('iop_node_in_flight', 'Runs in flight per node (every surface).', (sample) => sample.inFlight);
  nodeGauge(
    'iop_node_max_concurrency',
    "The node's runtime.max_concurrency as a dispatch bound (0 = unlimited).",
    (sample) => sample.maxConcurrency,
  );
}

/** What connected nodes discovered, and how many are connected, read at scrape time. */
function registerNodeDiscoveryGauges(
  registers: Registry[],
  discoveredNodes: EdgeMetricsOptions['discoveredNodes'],
  connectedNodes: EdgeMetricsOptions['connectedNodes'],
): void {
  new Gauge({
    name: 'iop_node_discovered_backends',
    help: 'Model servers a connected node discovered, by node and kind (ollama, vllm, llama.cpp, ...).',
    labelNames: ['node', 'kind'],
    registers,
    collect() {
      this.reset();
      for (const { nodeId, discovered } of discoveredNodes?.() ?? []) {
        for (const backend of discovered?.backends ?? []) this.inc({ node: nodeId, kind: backend.kind });
      }
    },
  });
  new Gauge({
    name: 'iop_node_discovered_models',
    help: 'Models served by the model servers a connected node discovered, by node and server kind.',
    labelNames: ['node', 'kind'],
    registers,
    collect() {
      this.reset();
      for (const { nodeId, discovered } of discoveredNodes?.() ?? []) {
        for (const backend of discovered?.backends ?? []) {
          this.inc({ node: nodeId, kind: backend.kind }, backend.models.length);
        }
      }
    },
  });
  new Gauge({
    name: 'iop_node_discovered_clis',
    help: 'Coding-agent CLIs found on a connected node, by node and CLI (1 each).',
    labelNames: ['node', 'cli'],
    registers,
    collect() {
      this.reset();
      for (const { nodeId, discovered } of discoveredNodes?.() ?? []) {
        for (const cli of discovered?.clis ?? []) this.set({ node: nodeId, cli: cli.name }, 1);
      }
    },
  });
  new Gauge({
    name: 'iop_node_discovered_gpus',
    help: 'GPUs a connected node reported.',
    labelNames: ['node'],
    registers,
    collect() {
      this.reset();
      for (const { nodeId, discovered } of discoveredNodes?.() ?? []) {
        if (discovered) this.set({ node: nodeId }, discovered.host.gpus.length);
      }
    },
  });
  new Gauge({
    name: 'iop_nodes_connected',
    help: 'Nodes currently connected and registered.',
    registers,
    collect() {
      this.set(connectedNodes?.() ?? 0);
    },
  });
}
