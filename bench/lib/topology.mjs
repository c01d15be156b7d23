// The processes a benchmark run measures: the fixed-latency backend, an edge (`iop-edge serve`, real config) and
// one node (`iop-node run`) whose openai_compat provider points at the backend; and, separately, an edge with
// many configured nodes for the simulated-node phase. Everything listens on 127.0.0.1 with ports chosen by the OS.
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProcess, waitUntil } from './processes.mjs';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const edgeMain = path.join(repoRoot, 'bench/edge-serve.mjs');
const nodeMain = path.join(repoRoot, 'apps/node/dist/main.js');
const edgeCli = path.join(repoRoot, 'apps/edge/dist/main.js');
export const MODEL = 'bench-model';
const NODE_TOKEN = 'bench-node-token';

const tempDirs = [];

export async function tempDir(prefix) {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export async function removeTempDirs() {
  for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

function edgeYaml({ dataDir, nodes, models, logLevel, edgeId = 'bench-edge', cluster }) {
  return `edge:
  id: ${edgeId}
  listen: '127.0.0.1:0'
  data_dir: '${dataDir}'
logging: { level: '${logLevel}', format: json }
metrics: { enabled: true, listen: '127.0.0.1:0' }
refresh: { enabled: false, listen: '127.0.0.1:0' }
bootstrap: { listen: '127.0.0.1:0', artifact_dir: '${path.join(dataDir, 'no-artifacts')}' }
openai: { enabled: true, listen: '127.0.0.1:0', timeout_sec: 600 }
a2a: { enabled: false, listen: '127.0.0.1:0' }
models: ${JSON.stringify(models)}
nodes: ${JSON.stringify(nodes)}
${cluster ? `cluster: ${JSON.stringify(cluster)}\n` : ''}`;
}

/** Parses the `iop-edge serve` banner: `  <name>  <address>` lines. */
function bannerAddresses(output) {
  const addresses = {};
  for (const match of output.matchAll(/^ {2}(node transport|[a-z0-9-]+)\s+(\S+)/gm))
    addresses[match[1]] = match[2];
  return addresses;
}

async function startEdge(name, yaml, dataDir, nodeOptions = [], openFiles = undefined) {
  const configPath = path.join(dataDir, 'edge.yaml');
  await writeFile(configPath, yaml);
  const edge = await startProcess({
    name,
    script: edgeMain,
    nodeOptions,
    args: ['serve', '--config', configPath],
    ready: /iop-edge serving[\s\S]*\n {2}openai\s+\S+\n/,
    timeoutMs: 30_000,
    openFiles,
  });
  return { ...edge, addresses: bannerAddresses(edge.match[0]) };
}

/** The one bench node with its openai_compat provider on the backend (capacity 1024). */
function benchNodes(backendUrl) {
  return [
    {
      id: 'bench-node',
      token: NODE_TOKEN,
      runtime: { max_concurrency: 1024, health_probe_interval_ms: 0 },
      adapters: {
        instances: [
          {
            name: 'backend',
            type: 'openai_compat',
            provider: 'vllm',
            base_url: `${backendUrl}/v1`,
            request_timeout_ms: 60_000,
          },
        ],
      },
      providers: [
        {
          id: 'bench-provider',
          type: 'vllm',
          category: 'api',
          adapter: 'backend',
          models: [MODEL],
          capacity: 1024,
          max_queue: 10_000,
          queue_timeout_ms: 60_000,
        },
      ],
    },
  ];
}

const benchModels = [{ id: MODEL, providers: { 'bench-provider': MODEL } }];

/** Backend + edge + one node, ready to serve `bench-model`. */
/** `nodeOptions` go to both processes (e.g. --cpu-prof). */
export async function startIopPath({ backendUrl, logLevel = 'warn', nodeOptions = [] }) {
  const dataDir = await tempDir('iop-bench-edge-');
  const nodes = benchNodes(backendUrl);
  const models = benchModels;
  const edge = await startEdge('edge', edgeYaml({ dataDir, nodes, models, logLevel }), dataDir, nodeOptions);
  const node = await startBenchNode(edge.addresses['node transport'], logLevel, nodeOptions);
  // `iop-node run` logs to stderr; readiness is checked through the edge (waitServing).
  return { edge, node, openaiUrl: edge.addresses.openai, metricsUrl: edge.addresses.metrics };
}

async function startBenchNode(edgeAddress, logLevel, nodeOptions = []) {
  const nodeDir = await tempDir('iop-bench-node-');
  return startProcess({
    name: 'node',
    script: nodeMain,
    nodeOptions,
    args: [
      'run',
      '--edge',
      edgeAddress,
      '--node-id',
      'bench-node',
      '--data-dir',
      nodeDir,
      '--log-level',
      logLevel,
      '--log-format',
      'json',
    ],
    env: { IOP_NODE_TOKEN: NODE_TOKEN },
  });
}

/**
 * Two edges in cluster mode over `natsUrl` (same config but edge.id) and the bench node on the first: a request
 * to the first runs locally, one to the second is forwarded over NATS to the first.
 */
export async function startClusterPair({ backendUrl, natsUrl, logLevel = 'warn' }) {
  // One fabric key, a copy per edge (as `iop-edge cluster keygen` writes it: base64 of 32 bytes, mode 0600).
  const fabricKey = randomBytes(32).toString('base64');
  const edges = [];
  for (const edgeId of ['bench-edge-a', 'bench-edge-b']) {
    const dataDir = await tempDir(`iop-bench-${edgeId}-`);
    const fabricKeyFile = path.join(dataDir, 'fabric.key');
    await writeFile(fabricKeyFile, `${fabricKey}\n`, { mode: 0o600 });
    const cluster = {
      enabled: true,
      fabric_key_file: fabricKeyFile,
      nats: { servers: [natsUrl] },
      heartbeat_ms: 200,
      state_ttl_ms: 2000,
    };
    const yaml = edgeYaml({
      dataDir,
      nodes: benchNodes(backendUrl),
      models: benchModels,
      logLevel,
      edgeId,
      cluster,
    });
    edges.push(await startEdge(edgeId, yaml, dataDir));
  }
  const node = await startBenchNode(edges[0].addresses['node transport'], logLevel);
  return { edges, node, localUrl: edges[0].addresses.openai, forwardedUrl: edges[1].addresses.openai };
}

/**
 * The bench node's entry in edge.yaml with the given adapter instances and providers (for phases that need their
 * own backends, e.g. the affinity phase's four providers); started with startBenchNodeOn.
 */
export function benchNodeEntry({ instances, providers, maxConcurrency = 1024 }) {
  return {
    id: 'bench-node',
    token: NODE_TOKEN,
    runtime: { max_concurrency: maxConcurrency, health_probe_interval_ms: 0 },
    adapters: { instances },
    providers,
  };
}

/** Writes an edge.yaml with `nodes` and `models` into a fresh data dir: `{ dataDir, configPath }`. */
export async function writeEdgeConfig({ prefix, nodes, models, logLevel = 'warn' }) {
  const dataDir = await tempDir(prefix);
  const configPath = path.join(dataDir, 'edge.yaml');
  await writeFile(configPath, edgeYaml({ dataDir, nodes, models, logLevel }));
  return { dataDir, configPath };
}

/**
 * `iop-edge config check` of a config file: `{ ok, output }` (the edge's own validation, the same the serve command
 * runs first; `output` lists every problem with its path).
 */
export function checkEdgeConfig(configPath) {
  const result = spawnSync(process.execPath, [edgeCli, 'config', 'check', '--config', configPath], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { ok: result.status === 0, output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() };
}

/** Starts `iop-edge serve` on a config written by writeEdgeConfig. */
export async function startEdgeFromConfig(name, { dataDir, configPath }) {
  const yaml = await readFile(configPath, 'utf8');
  return startEdge(name, yaml, dataDir);
}

/** Waits until the edge answers a chat completion through the node (registration + provider ready). */
export async function waitServing(openaiUrl) {
  await waitUntil(
    async () => {
      try {
        const response = await fetch(`${openaiUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: MODEL,
            messages: [{ role: 'user', content: 'ping' }],
            max_tokens: 1,
          }),
        });
        await response.arrayBuffer();
        return response.status === 200;
      } catch {
        return false;
      }
    },
    30_000,
    'the edge to serve through the node',
    100,
  );
}

/**
 * An edge for the many-node phase: `count` nodes pre-registered in its node store (`<data_dir>/nodes.json`, the
 * file `iop-edge node register` writes: node id `sim-<i>`, only the SHA-256 of token `<tokenPrefix><i>`), as a
 * fleet too large for `nodes[]` in edge.yaml is registered; with `backendUrl`, also the bench node and its
 * provider in the config (a real node to send requests through while the simulated ones are connected).
 * `tokenPrefix` is fresh per run, so the tokens are not guessable from the source. `nodeOptions` go to the edge;
 * `openFiles` raises its open-files limit (one descriptor per connection).
 */
export async function startManyNodeEdge(
  count,
  { backendUrl, tokenPrefix, nodeOptions = [], openFiles } = {},
) {
  const dataDir = await tempDir('iop-bench-many-');
  const now = new Date().toISOString();
  const prefix = tokenPrefix ?? `bench-${randomBytes(8).toString('hex')}-`;
  const records = Array.from({ length: count }, (_, index) => ({
    node_id: `sim-${index}`,
    token_sha256: createHash('sha256').update(`${prefix}${index}`, 'utf8').digest('hex'),
    created_at: now,
    rotated_at: now,
  }));
  await writeFile(path.join(dataDir, 'nodes.json'), `${JSON.stringify({ version: 1, nodes: records })}\n`, {
    mode: 0o600,
  });
  const yaml = edgeYaml({
    dataDir,
    nodes: backendUrl ? benchNodes(backendUrl) : [],
    models: backendUrl ? benchModels : [],
    logLevel: 'warn',
    edgeId: 'bench-edge-many',
  });
  const edge = await startEdge(`edge-${count}-nodes`, yaml, dataDir, nodeOptions, openFiles);
  return { ...edge, tokenPrefix: prefix };
}

/** Starts the bench node (`iop-node run`) on an edge started with startManyNodeEdge({ backendUrl }). */
export function startBenchNodeOn(edge) {
  return startBenchNode(edge.addresses['node transport'], 'warn');
}
