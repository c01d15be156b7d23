// Cross-process end to end of API-key limits in cluster mode (issue 20): a real nats-server, two real edges with
// the same edge.yaml (only edge.id and data_dir differ) and one real node on each edge, so requests sent to
// either edge run locally there. A key's limits are counted once for the cluster (on the key's home edge):
//   1. a key with max_concurrent 2: six chats at once, spread over both edges, admit exactly 2; the other four
//      are the usual 429 concurrency_limited with Retry-After (per-edge counting would admit 4);
//   2. a key with rpm 3: six chats alternating between the edges admit exactly 3, then 429 rate_limited;
//   3. `GetUsage` (`iop-edge usage`) asked of either edge shows the same cluster-wide totals, though each edge
//      recorded only the runs it ran.
// Skipped with one printed line when nats-server is missing (`.ci/run` installs it).
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startFakeOllama, startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../../src/test-support/nats-server.js';
import {
  ProcessGroup,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import {
  FABRIC_TOKEN,
  MODEL_LLAMA,
  OLLAMA_SERVED,
  fabricConfig,
  ollamaProviderId,
  writeFabricKeyFile,
  clusterSection,
} from '../support/fabric-config.js';

jest.setTimeout(120_000);

const available = natsServerAvailable('cluster limits e2e');
const suite = available ? describe : describe.skip;

const NODE_IDS = ['n1', 'n2'] as const;
const EDGE_IDS = ['e1', 'e2'] as const;
const KEY_CONCURRENT = 'sk-e2e-cluster-two-at-once';
const KEY_RPM = 'sk-e2e-cluster-rpm-3';

const group = new ProcessGroup();
let nats: NatsServer;
let ollama: FakeServer;
let vllm: FakeServer;
const edges = new Map<string, EdgeProcess>();
const admins = new Map<string, AdminClient>();
const nodes = new Map<string, TestProcess>();

function clusterConfig(edgeId: string, dataDir: string, keyFile: string): Record<string, unknown> {
  const base = fabricConfig({
    dataDir,
    nodes: NODE_IDS.map((id) => ({ id, ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 8 })),
  });
  return {
    ...base,
    edge: { ...(base.edge as Record<string, unknown>), id: edgeId },
    openai: {
      ...(base['openai'] as Record<string, unknown>),
      api_keys: [
        { id: 'two-at-once', key: KEY_CONCURRENT, max_concurrent: 2 },
        { id: 'rpm-3', key: KEY_RPM, rpm: 3 },
      ],
    },
    cluster: clusterSection(nats.url, keyFile),
  };
}

interface Answer {
  status: number;
  retryAfter: string | null;
  code: string | undefined;
}

async function chat(edgeId: string, key: string): Promise<Answer> {
  const response = await fetch(`${(edges.get(edgeId) as EdgeProcess).addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: MODEL_LLAMA, messages: [{ role: 'user', content: 'alpha beta' }] }),
  });
  const body = (await response.json()) as { error?: { code?: string } };
  return { status: response.status, retryAfter: response.headers.get('retry-after'), code: body.error?.code };
}

function describeAll(): string {
  return [...edges.values(), ...nodes.values()].map((proc) => proc.describe()).join('\n');
}

suite('edge cluster: API-key limits and usage count cluster-wide', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
    // Each chat streams 8 tokens 150 ms apart: runs overlap for over a second.
    ollama = await startFakeOllama({
      behavior: { models: [OLLAMA_SERVED], tokenCount: 8, tokenDelayMs: 150 },
    });
    vllm = await startFakeOpenAI({ behavior: { models: ['unused'] } });
    for (const edgeId of EDGE_IDS) {
      const dir = await group.tempDir(`iop-e2e-cluster-limits-${edgeId}-`);
      const edge = await startEdgeProcess(
        group,
        dir,
        clusterConfig(edgeId, `${dir}/data`, writeFabricKeyFile(dir)),
        edgeId,
      );
      edges.set(edgeId, edge);
      admins.set(
        edgeId,
        createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock),
      );
    }
    for (const [index, nodeId] of NODE_IDS.entries()) {
      nodes.set(
        nodeId,
        startNodeProcess(group, {
          edge: (edges.get(EDGE_IDS[index]) as EdgeProcess).addresses.transport,
          nodeId,
          token: FABRIC_TOKEN,
          dataDir: await group.tempDir(`iop-e2e-cluster-limits-${nodeId}-`),
        }),
      );
    }
    for (const edgeId of EDGE_IDS) {
      await waitUntil(
        async () => {
          const providers = await (admins.get(edgeId) as AdminClient).listProviders();
          return NODE_IDS.every((id) =>
            providers.some((p) => p.providerId === ollamaProviderId(id) && p.status === 'ready'),
          );
        },
        40_000,
        () => `every provider ready on ${edgeId}\n${describeAll()}`,
      );
    }
  }, 120_000);

  afterAll(async () => {
    for (const admin of admins.values()) admin.close();
    await group.close();
    await ollama?.close();
    await vllm?.close();
    await nats?.stop();
  });

  it('max_concurrent 2: six chats at once over both edges admit exactly two; the rest get 429 with Retry-After', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) => chat(EDGE_IDS[index % 2] as string, KEY_CONCURRENT)),
    );
    const admitted = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(admitted).toHaveLength(2);
    expect(refused).toHaveLength(4);
    for (const answer of refused) {
      expect(answer).toMatchObject({ status: 429, code: 'concurrency_limited' });
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Once they ended, the slots are free again on every edge (the releases travel over NATS: allow them a moment).
    for (const edgeId of EDGE_IDS) {
      await waitUntil(
        async () => (await chat(edgeId, KEY_CONCURRENT)).status === 200,
        5000,
        () => `a chat with the max_concurrent key admitted on ${edgeId}\n${describeAll()}`,
      );
    }
  });

  it('rpm 3: six chats alternating between the edges admit exactly three, then 429 rate_limited', async () => {
    const answers: Answer[] = [];
    for (let index = 0; index < 6; index += 1) answers.push(await chat(EDGE_IDS[index % 2], KEY_RPM));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429, 429, 429]);
    for (const answer of answers.slice(3)) {
      expect(answer.code).toBe('rate_limited');
      const retryAfter = Number(answer.retryAfter);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
  });

  it('usage asked of either edge is the cluster-wide total of what both edges ran', async () => {
    const byEdge = new Map<string, Map<string, { runs: number; completed: number }>>();
    const read = async (): Promise<boolean> => {
      for (const edgeId of EDGE_IDS) {
        const rows = await (admins.get(edgeId) as AdminClient).getUsage({ by: 'key', sinceUnixMs: 0 });
        byEdge.set(
          edgeId,
          new Map(rows.map((row) => [row.group, { runs: row.runs, completed: row.completed }])),
        );
      }
      return EDGE_IDS.every((edgeId) => byEdge.get(edgeId)?.get('rpm-3')?.runs === 3);
    };
    // The last run's record is written as it ends, which may be just after its response.
    await waitUntil(read, 5000, 'usage of the last run recorded');
    for (const edgeId of EDGE_IDS) {
      const rows = byEdge.get(edgeId) as Map<string, { runs: number; completed: number }>;
      // 2 at once + one more per edge; 3 within the minute.
      expect(rows.get('two-at-once')).toEqual({ runs: 4, completed: 4 });
      expect(rows.get('rpm-3')).toEqual({ runs: 3, completed: 3 });
    }
    // Each edge recorded only its own runs: by node, the two edges' runs are on both nodes.
    const byNode = await (admins.get('e1') as AdminClient).getUsage({ by: 'node', sinceUnixMs: 0 });
    expect(byNode.map((row) => row.group).sort()).toEqual(['n1', 'n2']);
  });
});
