// The layering of every tree in the repository, as in shared/ARCHITECTURE.md's picture (dependencies point
// down it): keep the two the same. Numbers only order the layers; equal numbers are peers that may import each
// other (cycles are refused separately).
import type { LayerTable } from './layer-rules.js';

const SURFACE_MAY_IMPORT = [
  'service',
  'surface-kit',
  'http',
  'net',
  'tls',
  'present',
  'governance',
  'refresh',
  'events',
  'metrics',
  'logging.ts',
  'version.ts',
  'clock.ts',
  'random-ids.ts',
  'abort-watchers.ts',
  'run-registry-error.ts',
];

/** apps/edge/src: surfaces → surface kit → service → cluster → placement → pool → node → transport → base. */
export const EDGE: LayerTable = {
  root: 'apps/edge/src',
  layers: {
    // base: no knowledge of runs, nodes or HTTP routes
    'logging.ts': 0,
    'version.ts': 0,
    'clock.ts': 0,
    'random-ids.ts': 0,
    'abort-watchers.ts': 0,
    'run-registry-error.ts': 0,
    net: 0,
    http: 0,
    tls: 0,
    // what any surface or command shows: node and provider views, terminal-safe text, node labels
    present: 0,
    events: 1,
    // one framed TCP/TLS connection per node; bounds before registration
    transport: 2,
    // registration, the edge's end of each node link, the registry, heartbeats
    node: 3,
    // models[] × providers × node capacity, health, leases, queues
    pool: 4,
    metrics: 4,
    governance: 5,
    refresh: 5,
    adopt: 5,
    // "where does this run execute": the local pool or a remote edge (the interfaces the cluster implements)
    placement: 6,
    // a remote directory and transport over NATS (authenticated, encrypted) behind placement's interfaces
    cluster: 7,
    // submitRun · cancel · lookup: one run supervisor per run
    service: 8,
    // what every HTTP surface is built from: request context, JSON body, SSE writer, error base and answers,
    // dropped-params header, run-part dispatcher, ids, and the surface-neutral run plumbing (route resolver,
    // run starter, surface run, run output, surface metrics)
    'surface-kit': 9,
    // surfaces: translate a protocol to service calls; peers that never import each other
    openai: 10,
    anthropic: 10,
    a2a: 10,
    console: 10,
    admin: 10,
    bootstrap: 10,
    ui: 10,
    // composition root
    'edge-core.ts': 11,
    'edge-runtime.ts': 11,
    // the composition root's steps (open the local core, start the cluster, open the run records, build the
    // service, wire config refresh, start the surfaces, the shutdown order), each named for what it does
    runtime: 11,
    'surfaces.ts': 11,
    'surface.ts': 11,
    // one file per command; they build the runtime
    cli: 12,
    'run-edge.ts': 13,
    'main.ts': 14,
  },
  allowOutside: ['apps/edge/package.json'],
  restricted: [
    {
      // A surface reaches runs and nodes only through the service: never placement, cluster, pool, node or
      // transport, and never another surface (what two surfaces share lives in the surface kit). Besides the
      // service and the kit it may use the shared HTTP and base helpers and the service-level registries it is
      // handed by type: governance (its API keys and usage), refresh (config refresh), events (the run and node
      // feed) and metrics (its own counters).
      name: 'surface',
      entries: ['openai', 'anthropic', 'a2a', 'console', 'admin', 'bootstrap', 'ui'],
      mayImport: SURFACE_MAY_IMPORT,
    },
    {
      // The kit below the surfaces reaches runs only through the service too, and knows no surface.
      name: 'surface kit',
      entries: ['surface-kit'],
      mayImport: SURFACE_MAY_IMPORT.filter((entry) => entry !== 'surface-kit'),
    },
    {
      // Placement is sealed: the run supervisor, the retry policy and the service's node operations know only
      // placement's interfaces, failure reasons and errors, never the pool or the node links behind them.
      name: 'service over placement',
      entries: ['service'],
      mayNotImport: ['pool', 'node', 'transport'],
    },
  ],
};

/** apps/node/src: cli → runner → discovery / health → link → adapters → http client, sessions, history. */
export const NODE: LayerTable = {
  root: 'apps/node/src',
  layers: {
    // what the adapter interface and the HTTP client both build on
    'adapters/cancellation.ts': 0,
    'adapters/line-limits.ts': 0,
    'adapters/line-splitter.ts': 0,
    'adapters/health-probe-result.ts': 0,
    sessions: 0,
    history: 0,
    // the keep-alive HTTP/1.1 client and the upstream helpers of the HTTP adapters
    'adapters/http': 1,
    adapters: 2,
    // agents' loopback model endpoints: their connections carried over the link as model calls (issue 42)
    'model-endpoint': 2.5,
    // the node's end of the link to its edge (registration, reconnects, outbound envelopes)
    link: 3,
    discovery: 4,
    health: 4,
    // runs, commands and the agent that ties link, adapters, history and probes together
    runner: 5,
    cli: 6,
    'run-node.ts': 7,
    'main.ts': 8,
  },
  allowOutside: ['apps/node/package.json'],
};

/** apps/edge-ui/src: the dashboard; it talks to the edge over HTTP only (types from @iop/ui-api). */
export const EDGE_UI: LayerTable = {
  root: 'apps/edge-ui/src',
  layers: {
    'format.ts': 0,
    'api.ts': 1,
    views: 2,
    'app.tsx': 3,
    'main.tsx': 4,
  },
};

export const APP_TABLES: readonly LayerTable[] = [EDGE, NODE, EDGE_UI];

/** Package layers (by package name): a package imports only packages of a lower layer, never an app. */
export const PACKAGE_LAYERS: Readonly<Record<string, number>> = {
  proto: 0,
  logging: 0,
  'cli-kit': 0,
  clock: 0,
  // the one helper for typed errors (below config and wire, which build their errors on it)
  errors: 0,
  tracing: 0,
  'sqlite-wal': 1,
  config: 1,
  'ui-api': 0,
  wire: 1,
  testkit: 2,
  architecture: 3,
};

/** Workspace names that are apps: no package imports them. */
export const APP_PACKAGES: readonly string[] = ['@iop/edge', '@iop/node', '@iop/edge-ui'];
