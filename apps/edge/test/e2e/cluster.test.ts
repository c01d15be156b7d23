// Cross-process end to end of cluster mode (issue 20): a real nats-server (JetStream), three real edges with the
// same edge.yaml (only edge.id and data_dir differ) and three real nodes, each node given all three edge
// addresses with its own edge first. Each node's provider (capacity 2) answers from its own fake Ollama, so the
// backends count what each provider ran.
//   1. 36 chats spread over the three edges are all answered, by providers on all three nodes (an edge forwards
//      what its own node has no room for), and no backend ever sees more than 2 at once.
//   2. A background response created on one edge is read on another; `nodes list` shows each node with its edge.
//      A conversation (`x-session-id`) forwarded once to another edge's provider goes back to that provider on its
//      next turns, though the receiving edge's own provider has room again (issue 32, affinity fabric-wide).
//   3. Killing one edge (SIGKILL) mid-run: its node registers with another edge within one retry interval, the
//      runs other edges had forwarded to it end with a well-formed error, the runs it had forwarded to others are
//      cancelled there (their backends see them end long before their natural end), and afterwards every
//      provider's in_flight and queued are 0 on every surviving edge.
// Skipped with one printed line when nats-server is missing (`.ci/run` installs it).
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startFakeOllama, startFakeOpenAI, type FakeServer, type RecordedRequest } from '@iop/testkit';
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
import { peakConcurrency } from '../support/peak-concurrency.js';
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

const available = natsServerAvailable('cluster e2e');
const suite = available ? describe : describe.skip;

const NODE_IDS = ['n1', 'n2', 'n3'] as const;
const EDGE_IDS = ['e1', 'e2', 'e3'] as const;
const CAPACITY = 2;
const RETRY_INTERVAL_MS = 300;

const group = new ProcessGroup();
let nats: NatsServer;
const backends = new Map<string, FakeServer>();
let vllm: FakeServer;
const edges = new Map<string, EdgeProcess>();
const admins = new Map<string, AdminClient>();
const nodes = new Map<string, TestProcess>();

function clusterConfig(edgeId: string, dataDir: string, keyFile: string): Record<string, unknown> {
  const base = fabricConfig({
    dataDir,
    nodes: NODE_IDS.map((id) => ({
      id,
      ollamaUrl: (backends.get(id) as FakeServer).url,
      vllmUrl: vllm.url,
      capacity: CAPACITY,
      maxQueue: 64,
      queueTimeoutMs: 30_000,
    })),
  });
  return {
    ...base,
    edge: { ...(base.edge as Record<string, unknown>), id: edgeId },
    cluster: clusterSection(nats.url, keyFile),
  };
}

function chats(server: FakeServer): RecordedRequest[] {
  return server.requests.filter((request) => request.path === '/api/chat');
}

function chat(
  edgeId: string,
  text: string,
  signal?: AbortSignal,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${(edges.get(edgeId) as EdgeProcess).addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL_LLAMA, messages: [{ role: 'user', content: text }] }),
    ...(signal ? { signal } : {}),
  });
}

async function allReady(edgeId: string): Promise<boolean> {
  const providers = await (admins.get(edgeId) as AdminClient).listProviders();
  return NODE_IDS.every((id) =>
    providers.some((p) => p.providerId === ollamaProviderId(id) && p.status === 'ready'),
  );
}

async function idle(edgeId: string): Promise<boolean> {
  const providers = await (admins.get(edgeId) as AdminClient).listProviders();
  return providers.every((provider) => provider.inFlight === 0 && provider.queued === 0);
}

function describeAll(): string {
  return [...edges.values(), ...nodes.values()].map((proc) => proc.describe()).join('\n');
}

suite('edge cluster: three edges, three nodes, one NATS', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
    for (const id of NODE_IDS) {
      backends.set(
        id,
        await startFakeOllama({ behavior: { models: [OLLAMA_SERVED], tokenCount: 6, tokenDelayMs: 20 } }),
      );
    }
    vllm = await startFakeOpenAI({ behavior: { models: ['unused'] } });
    for (const edgeId of EDGE_IDS) {
      const dir = await group.tempDir(`iop-e2e-cluster-${edgeId}-`);
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
    // Node i lists edge i first, then the others.
    for (const [index, nodeId] of NODE_IDS.entries()) {
      const order = [...EDGE_IDS.slice(index), ...EDGE_IDS.slice(0, index)];
      nodes.set(
        nodeId,
        startNodeProcess(group, {
          edge: order.map((edgeId) => (edges.get(edgeId) as EdgeProcess).addresses.transport).join(','),
          nodeId,
          token: FABRIC_TOKEN,
          dataDir: await group.tempDir(`iop-e2e-cluster-${nodeId}-`),
          retryIntervalMs: RETRY_INTERVAL_MS,
        }),
      );
    }
    for (const edgeId of EDGE_IDS) {
      await waitUntil(
        () => allReady(edgeId),
        40_000,
        () => `every provider ready on ${edgeId}\n${describeAll()}`,
      );
    }
  }, 120_000);

  afterAll(async () => {
    for (const admin of admins.values()) admin.close();
    await group.close();
    for (const backend of backends.values()) await backend.close();
    await vllm?.close();
    await nats?.stop();
  });

  it('serves chats sent to every edge with providers on every node, never above a provider capacity', async () => {
    const started = new Map([...backends].map(([id, server]) => [id, chats(server).length]));
    const responses = await Promise.all(
      Array.from({ length: 36 }, (_, index) => chat(EDGE_IDS[index % 3] as string, `hello ${index}`)),
    );
    const servedBy = new Map<string, Set<string>>();
    for (const [index, response] of responses.entries()) {
      expect(response.status).toBe(200);
      const body = (await response.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]?.message.content).toContain('hello');
      const edgeId = EDGE_IDS[index % 3] as string;
      const provider = response.headers.get('x-iop-provider') ?? '';
      servedBy.set(edgeId, (servedBy.get(edgeId) ?? new Set()).add(provider));
    }
    for (const [id, server] of backends) {
      const seen = chats(server).slice(started.get(id));
      expect(seen.length).toBeGreaterThan(0);
      expect(peakConcurrency(seen)).toBeLessThanOrEqual(CAPACITY);
    }
    // Each edge had runs served by another edge's node (forwarded).
    for (const edgeId of EDGE_IDS) expect(servedBy.get(edgeId)?.size).toBeGreaterThan(1);
    for (const edgeId of EDGE_IDS) await waitUntil(() => idle(edgeId), 10_000, `${edgeId} idle`);
  });

  it('answers a background response on any edge, and lists every node with its edge', async () => {
    const created = await fetch(`${(edges.get('e2') as EdgeProcess).addresses.openai}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_LLAMA, input: 'background hello', background: true }),
    });
    const { id } = (await created.json()) as { id: string };
    let status = '';
    await waitUntil(
      async () => {
        const read = await fetch(`${(edges.get('e3') as EdgeProcess).addresses.openai}/v1/responses/${id}`);
        status = ((await read.json()) as { status?: string }).status ?? `http ${read.status}`;
        return status === 'completed';
      },
      10_000,
      () => `background response ${id} completed as seen from e3 (last: ${status})`,
    );
    const listed = await (admins.get('e1') as AdminClient).listNodes();
    expect(listed.map((node) => [node.nodeId, node.edgeId]).sort()).toEqual([
      ['n1', 'e1'],
      ['n2', 'e2'],
      ['n3', 'e3'],
    ]);
    for (const edgeId of EDGE_IDS) await waitUntil(() => idle(edgeId), 10_000, `${edgeId} idle`);
  });

  it('keeps a conversation on the provider of another edge that served it, though this edge has room again', async () => {
    // n1 (e1's own node) is kept busy while turn 1 arrives at e1: it is forwarded to n2 or n3.
    const own = backends.get('n1') as FakeServer;
    own.setBehavior({ firstTokenDelayMs: 1500 });
    const holders = [chat('e1', 'hold 1'), chat('e1', 'hold 2')];
    await waitUntil(
      async () =>
        (await (admins.get('e1') as AdminClient).listProviders()).some(
          (provider) => provider.providerId === ollamaProviderId('n1') && provider.inFlight === CAPACITY,
        ),
      10_000,
      () => 'n1 busy',
    );
    const turn = (text: string) => chat('e1', text, undefined, { 'x-session-id': 'cluster-conv' });
    const first = await turn('turn 1');
    expect(first.status).toBe(200);
    const home = first.headers.get('x-iop-provider') ?? '';
    expect([ollamaProviderId('n2'), ollamaProviderId('n3')]).toContain(home);
    for (const holder of await Promise.all(holders)) expect(holder.status).toBe(200);
    own.setBehavior({ firstTokenDelayMs: 0 });
    await waitUntil(() => idle('e1'), 10_000, 'e1 idle');
    // n1 is free now (the capacity rule alone would serve here): the conversation stays where its prefix is.
    for (let index = 2; index <= 6; index += 1) {
      const next = await turn(`turn ${index}`);
      expect(next.status).toBe(200);
      expect(next.headers.get('x-iop-provider')).toBe(home);
    }
    // Another conversation with no history still takes this edge's free provider.
    const fresh = await chat('e1', 'a new conversation', undefined, { 'x-session-id': 'cluster-fresh' });
    expect(fresh.headers.get('x-iop-provider')).toBe(ollamaProviderId('n1'));
    for (const edgeId of EDGE_IDS) await waitUntil(() => idle(edgeId), 10_000, `${edgeId} idle`);
  });

  it('when an edge dies mid-run, its node moves to another edge, forwarded runs end with an error, and nothing leaks', async () => {
    // Runs of 8 s: a backend request the client closed before its end was ended by the cluster.
    for (const server of backends.values()) server.setBehavior({ tokenCount: 400, tokenDelayMs: 20 });
    const tagged = (nodeId: string, tag: string) =>
      chats(backends.get(nodeId) as FakeServer).filter((request) => request.rawBody.includes(tag));
    const answer = (edgeId: string, text: string) =>
      chat(edgeId, text).then(
        async (response) => ({ status: response.status, text: await response.text() }),
        (error: unknown) => ({ status: 0, text: String(error) }),
      );
    const settle = () => new Promise((resolve) => setTimeout(resolve, 400)); // a state publish and its watch
    // 1. e2 fills its own n2, then forwards two runs to e1 (n1): both have room, e1 comes first.
    const localOnE2 = [answer('e2', 'e2-local 0'), answer('e2', 'e2-local 1')];
    await waitUntil(
      () => tagged('n2', 'e2-local').length === 2,
      10_000,
      () => `n2 full\n${describeAll()}`,
    );
    await settle();
    const forwardedToE1 = [answer('e2', 'to-e1 0'), answer('e2', 'to-e1 1')];
    await waitUntil(
      () => tagged('n1', 'to-e1').length === 2,
      10_000,
      () => `e2 → e1\n${describeAll()}`,
    );
    await settle();
    // 2. e1, its own n1 full, forwards two runs to e3 (n3).
    const fromE1 = [answer('e1', 'from-e1 0'), answer('e1', 'from-e1 1')];
    await waitUntil(
      () => tagged('n3', 'from-e1').length === 2,
      10_000,
      () => `e1 → e3\n${describeAll()}`,
    );
    const e1 = edges.get('e1') as EdgeProcess;
    const n1 = nodes.get('n1') as TestProcess;
    const killedAt = Date.now();
    await e1.stop('SIGKILL');
    // n1 registers with e2 or e3 (its next addresses) on its next attempt.
    const registeredElsewhere = () =>
      n1.logRecords().some((record) => record['msg'] === 'registered with edge' && record['edgeId'] !== 'e1');
    expect(registeredElsewhere()).toBe(false);
    await waitUntil(registeredElsewhere, 10_000, () => `n1 registered with e2 or e3\n${n1.describe()}`);
    const reconnectMs = Date.now() - killedAt;
    // e3 cancels what e1 had forwarded to it once e1 is gone (state TTL 1.5 s): its backend sees the client go.
    await waitUntil(
      () => tagged('n3', 'from-e1').every((request) => request.outcome === 'client-closed'),
      6_000,
      () => `runs e1 forwarded cancelled on e3\n${describeAll()}`,
    );
    // e1's own clients lost their connection with it.
    expect((await Promise.all(fromE1)).map((result) => result.status)).toEqual([0, 0]);
    process.stdout.write(`cluster e2e: n1 registered with another edge ${reconnectMs} ms after e1 died\n`);
    // One retry interval (±20 % jitter) after the link dropped, plus a register handshake on a loaded machine.
    expect(reconnectMs).toBeLessThan(RETRY_INTERVAL_MS * 1.2 + 1_200);

    // The runs e2 had forwarded to e1 end with a well-formed error (JSON, 5xx); e2's local runs complete.
    const failed = await Promise.all(forwardedToE1);
    for (const result of failed) {
      expect(result.status).toBeGreaterThanOrEqual(500);
      expect(JSON.parse(result.text)).toMatchObject({
        error: expect.objectContaining({ message: expect.any(String) }),
      });
    }
    expect((await Promise.all(localOnE2)).map((result) => result.status)).toEqual([200, 200]);
    for (const backend of backends.values()) backend.setBehavior({ tokenCount: 6, tokenDelayMs: 20 });
    for (const edgeId of ['e2', 'e3']) {
      await waitUntil(
        () => allReady(edgeId),
        15_000,
        () => `all providers ready on ${edgeId}\n${describeAll()}`,
      );
      await waitUntil(
        () => idle(edgeId),
        15_000,
        () => `${edgeId} idle\n${describeAll()}`,
      );
    }
    // n1 is listed once, on the edge it moved to.
    await waitUntil(
      async () => {
        const listed = await (admins.get('e2') as AdminClient).listNodes();
        const n1Entries = listed.filter((node) => node.nodeId === 'n1');
        return n1Entries.length === 1 && ['e2', 'e3'].includes(n1Entries[0]?.edgeId ?? '');
      },
      10_000,
      'n1 listed once, on e2 or e3',
    );
    // n1 serves again through the surviving edges.
    const after = await Promise.all(
      Array.from({ length: 9 }, (_, index) => chat(index % 2 ? 'e2' : 'e3', `again ${index}`)),
    );
    expect(after.map((response) => response.status)).toEqual(Array.from({ length: 9 }, () => 200));
    for (const edgeId of ['e2', 'e3'])
      await waitUntil(() => idle(edgeId), 10_000, `${edgeId} idle at the end`);
  });
});
