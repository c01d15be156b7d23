// Config refresh across edges over a real nats-server (skipped with one printed line when it is missing): two
// real config refreshers (one per edge) behind the cluster refresher; a refresh asked of one edge is applied on
// both, or on neither.
import { systemClock } from '../clock.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import type { FabricBus } from './fabric-bus.js';
import { connectFabric } from '../test-support/fabric-bus-fixture.js';
import { silentLogger } from '../logging.js';
import type { NodeConfigApplyOutcome } from '../node/node-config-push.js';
import { createConfigRefresher, type ConfigRefresher } from '../refresh/config-refresher.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test-support/nats-server.js';
import { createClusterRefresher, fabricPart, withOwnPart, type ClusterRefresher } from './cluster-refresh.js';
import { configRevision } from './edge-cluster.js';

const available = natsServerAvailable('cluster refresh tests');
const suite = available ? describe : describe.skip;

function yaml(edgeId: string, capacity: number, level = 'info'): string {
  return `edge: { id: ${edgeId}, data_dir: /tmp/iop-${edgeId}, listen: "127.0.0.1:0" }
logging: { level: ${level} }
refresh: { enabled: true, admin_token: "" }
models:
  - { id: m, providers: { pa: "m1" } }
nodes:
  - id: na
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: pa, type: ollama, category: local_inference, adapter: ollama, models: ["m1"], capacity: ${capacity} }
`;
}

function load(text: string, baseDir?: string) {
  const result = parseConfigText(text, 'edge.yaml', baseDir ? { baseDir } : {});
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

describe('fabricPart / withOwnPart', () => {
  const perEdge = (edgeId: string, port: number) => `edge:
  id: ${edgeId}
  data_dir: /tmp/iop-${edgeId}
  listen: "127.0.0.1:${port}"
  tls: { enabled: true, cert_file: /etc/${edgeId}/cert.pem, key_file: /etc/${edgeId}/key.pem }
metrics: { enabled: true, listen: "127.0.0.1:${port + 1}" }
refresh: { enabled: true, listen: "127.0.0.1:${port + 2}", admin_token: "" }
bootstrap: { listen: "127.0.0.1:${port + 3}", public_url: "https://${edgeId}.example" }
openai: { enabled: true, listen: "127.0.0.1:${port + 4}" }
a2a: { enabled: false, listen: "127.0.0.1:${port + 5}", public_url: "https://${edgeId}.example/a2a" }
ui: { enabled: false, listen: "127.0.0.1:${port + 6}" }
cluster: { enabled: true, fabric_key_file: /etc/${edgeId}/fabric.key, nats: { servers: ["nats://127.0.0.1:4222"] } }
`;

  it("sends no per-edge setting, and the receiver puts its own back under the sender's fabric-wide changes", () => {
    const candidate = `${perEdge('edge-a', 19000)}logging: { level: debug }\nmodels: []\n`;
    const sent = fabricPart(candidate);
    for (const text of ['edge-a', '19000', '19001', '19004', 'fabric.key', 'cert.pem']) {
      expect(sent).not.toContain(text);
    }
    expect(sent).toContain('level: debug');
    const own = `${perEdge('edge-b', 29000)}logging: { level: info }\nmodels: []\n`;
    const merged = load(withOwnPart(sent, own));
    expect(merged.edge).toMatchObject({
      id: 'edge-b',
      data_dir: '/tmp/iop-edge-b',
      listen: '127.0.0.1:29000',
    });
    expect(merged.edge.tls.cert_file).toBe('/etc/edge-b/cert.pem');
    expect([merged.metrics.listen, merged.refresh.listen, merged.openai.listen, merged.ui.listen]).toEqual([
      '127.0.0.1:29001',
      '127.0.0.1:29002',
      '127.0.0.1:29004',
      '127.0.0.1:29006',
    ]);
    expect(merged.bootstrap.public_url).toBe('https://edge-b.example');
    expect(merged.a2a.public_url).toBe('https://edge-b.example/a2a');
    expect(merged.cluster.fabric_key_file).toBe('/etc/edge-b/fabric.key');
    expect(merged.logging.level).toBe('debug');
    // A setting the receiver's own file leaves out stays out (its default), whatever the sender had.
    expect(load(withOwnPart(fabricPart(candidate), 'edge: { id: edge-c }\n')).openai.listen).not.toBe(
      '127.0.0.1:19004',
    );
    expect(fabricPart('edge: [')).toBe('');
  });
});

interface Edge {
  id: string;
  nc: FabricBus;
  local: ConfigRefresher;
  cluster: ClusterRefresher;
}

let nats: NatsServer;
let dir: string;
const edges: Edge[] = [];

async function startEdge(
  id: string,
  text: string,
  peers: () => Edge[],
  nodeOutcome?: NodeConfigApplyOutcome,
): Promise<Edge> {
  const configPath = path.join(dir, `${id}.yaml`);
  await writeFile(configPath, text);
  const local = createConfigRefresher({
    clock: systemClock,
    // As the edge loads its file: relative paths against the file's directory.
    config: load(text, dir),
    configPath,
    ...(nodeOutcome ? { applyNodeConfig: () => Promise.resolve(nodeOutcome) } : {}),
  });
  const nc = await connectFabric(nats.url, id);
  const cluster = createClusterRefresher({
    clock: systemClock,
    edgeId: id,
    nc,
    liveEdges: () =>
      peers()
        .filter((peer) => peer.id !== id)
        .map((peer) => ({ edgeId: peer.id, configRevision: configRevision(peer.local.current()) })),
    revision: () => configRevision(local.current()),
    local,
    initialYaml: text,
    logger: silentLogger,
    timeoutMs: 5000,
  });
  await nc.flush();
  const edge = { id, nc, local, cluster };
  edges.push(edge);
  return edge;
}

function capacity(edge: Edge): number | undefined {
  return edge.local.current().nodes[0]?.providers[0]?.capacity;
}

suite('cluster config refresh over NATS', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-cluster-refresh-'));
  });
  afterEach(async () => {
    for (const edge of edges.splice(0)) {
      edge.cluster.close();
      edge.local.close();
      await edge.nc.close();
    }
  });
  afterAll(async () => {
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies a refresh asked of one edge on every edge', async () => {
    const a = await startEdge('edge-a', yaml('edge-a', 1), () => edges);
    const b = await startEdge('edge-b', yaml('edge-b', 1), () => edges);
    const dry = await a.cluster.refresher.refresh('dry-run', yaml('edge-a', 3), '');
    expect(dry.reports.filter((report) => report.class !== 'live')).toEqual([]);
    expect(dry.status).toBe('applied');
    expect(capacity(b)).toBe(1);
    const result = await a.cluster.refresher.refresh('apply', yaml('edge-a', 3), '');
    expect(result.status).toBe('applied');
    expect(result.reports).toContainEqual(
      expect.objectContaining({ path: 'cluster.edges.edge-b', class: 'live' }),
    );
    expect([capacity(a), capacity(b)]).toEqual([3, 3]);
    // Edge b kept its own identity.
    expect(b.local.current().edge.id).toBe('edge-b');
    expect(configRevision(a.local.current())).toBe(configRevision(b.local.current()));
  });

  it('applies nowhere when another edge would not, and reports its different revision', async () => {
    const a = await startEdge('edge-a', yaml('edge-a', 1), () => edges);
    // edge-b runs another logging level and capacity: for it the candidate needs a restart.
    const b = await startEdge('edge-b', yaml('edge-b', 2, 'debug'), () => edges);
    const result = await a.cluster.refresher.refresh('apply', yaml('edge-a', 3), '');
    expect(result.status).toBe('restart_required');
    expect(result.reports).toContainEqual(
      expect.objectContaining({ path: 'cluster.edges.edge-b', class: 'restart' }),
    );
    expect(result.reports.some((report) => report.reason.includes('runs config revision'))).toBe(true);
    expect([capacity(a), capacity(b)]).toEqual([1, 2]);
  });

  it('rolls every edge back when one refuses at apply', async () => {
    const a = await startEdge('edge-a', yaml('edge-a', 1), () => edges);
    const b = await startEdge('edge-b', yaml('edge-b', 1), () => edges, {
      status: 'rejected',
      results: [{ node_id: 'na', status: 'failed', revision: '', error: 'refused by the test' }],
      error: '',
    });
    const result = await a.cluster.refresher.refresh('apply', yaml('edge-a', 3), '');
    expect(result.status).toBe('rejected');
    expect(result.reports.map((report) => report.path)).toEqual(
      expect.arrayContaining(['cluster.edges.edge-b', 'cluster']),
    );
    expect([capacity(a), capacity(b)]).toEqual([1, 1]);
    expect(a.local.applied).toBe(2); // applied, then back
  });
});
