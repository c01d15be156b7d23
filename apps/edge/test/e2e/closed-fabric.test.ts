// Cross-process end to end of the closed fabric (issue 29): a real nats-server, two real edges with the same
// fabric key that listen on different ports of this host, and node-a (a real node) on edge 1. An outsider — a
// plain NATS client without the key on the same server — records every subject while edge 2 forwards a run to
// edge 1 and while a live refresh asked of edge 1 applies on both edges. Then:
//   1. the recorded bytes hold no prompt text, no node token, no API key and no bearer token;
//   2. replaying everything it recorded, replaying the forwarded run with its payload changed, a forged
//      `iop.run.edge-1` and a forged node claim (a KV put to iop_nodes) reach no backend, node-a stays connected
//      to edge 1, the edges count what they dropped (iop_cluster_rejected_total), and the fabric still forwards;
//   3. nats-server killed: edge 1 keeps serving its own node's model within 5 s; back: forwarding resumes
//      within 20 s.
// Skipped with one printed line when nats-server is missing (`.ci/run` installs it).
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startFakeOllama, startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../../src/test-support/nats-server.js';
import {
  freePort,
  ProcessGroup,
  scrapeMetrics,
  metricSum,
  startEdgeProcess,
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
import { startFabricNode } from '../support/fabric-setup.js';

jest.setTimeout(180_000);

const available = natsServerAvailable('closed fabric e2e');
const suite = available ? describe : describe.skip;

const API_KEY = 'sk-e2e-closed-fabric-first-0001';
const NEW_API_KEY = 'sk-e2e-closed-fabric-added-0002';
const BEARER = 'a2a-e2e-closed-fabric-bearer-0003';
const UPSTREAM_KEY = 'e2e-upstream-key';
const PROMPT = 'prompt text nobody else may read 0004';

interface Recorded {
  subject: string;
  reply: string | undefined;
  data: Uint8Array;
}

const group = new ProcessGroup();
let nats: NatsServer;
let ollama: FakeServer;
let vllm: FakeServer;
let edge1: EdgeProcess;
let edge2: EdgeProcess;
let admin1: AdminClient;
let admin2: AdminClient;
let node: TestProcess;
let config1: Record<string, unknown>;

async function edgeConfig(edgeId: string, dir: string, apiKeys: string[]): Promise<Record<string, unknown>> {
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [{ id: 'node-a', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
  });
  const listen = async () => `127.0.0.1:${await freePort()}`;
  return {
    ...base,
    edge: { ...(base.edge as Record<string, unknown>), id: edgeId, listen: await listen() },
    metrics: { enabled: true, listen: await listen() },
    refresh: { enabled: true, listen: await listen() },
    bootstrap: { listen: await listen() },
    openai: { enabled: true, listen: await listen(), timeout_sec: 60, api_keys: apiKeys },
    a2a: { enabled: false, bearer_token: BEARER },
    cluster: clusterSection(nats.url, writeFabricKeyFile(dir)),
  };
}

function chat(edge: EdgeProcess, text: string, key = API_KEY, timeoutMs = 15_000): Promise<Response> {
  return fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: MODEL_LLAMA, messages: [{ role: 'user', content: text }] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
}

/** A chat that came back 200 from node-a's provider (on edge 2: forwarded to edge 1). */
async function served(edge: EdgeProcess, text: string, timeoutMs?: number): Promise<boolean> {
  try {
    const response = await chat(edge, text, API_KEY, timeoutMs);
    await response.text();
    return response.status === 200 && response.headers.get('x-iop-provider') === ollamaProviderId('node-a');
  } catch {
    return false;
  }
}

function backendChats(): number {
  return ollama.requests.filter((request) => request.path === '/api/chat').length;
}

async function rejected(edge: EdgeProcess): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_cluster_rejected_total');
}

suite('closed fabric: an outsider on NATS reads nothing and drives nothing', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
    ollama = await startFakeOllama({
      behavior: { models: [OLLAMA_SERVED], tokenCount: 3, tokenDelayMs: 10 },
    });
    vllm = await startFakeOpenAI({ behavior: { models: ['unused'] } });
    const dir1 = await group.tempDir('iop-e2e-closed-edge-1-');
    const dir2 = await group.tempDir('iop-e2e-closed-edge-2-');
    config1 = await edgeConfig('edge-1', dir1, [API_KEY]);
    edge1 = await startEdgeProcess(group, dir1, config1, 'edge-1');
    edge2 = await startEdgeProcess(group, dir2, await edgeConfig('edge-2', dir2, [API_KEY]), 'edge-2');
    admin1 = createAdminClient({ address: edge1.addresses.admin, timeoutMs: 30_000 }, systemClock);
    admin2 = createAdminClient({ address: edge2.addresses.admin, timeoutMs: 30_000 }, systemClock);
    node = await startFabricNode(group, edge1, { nodeId: 'node-a' });
    await waitUntil(
      () => served(edge2, 'warm up'),
      60_000,
      () => `edge-2 forwarding\n${edge2.describe()}`,
    );
  }, 120_000);

  afterAll(async () => {
    admin1?.close();
    admin2?.close();
    await group.close();
    await ollama?.close();
    await vllm?.close();
    await nats?.stop();
  });

  it('reads nothing, and nothing it sends or replays is served; the fabric keeps working', async () => {
    expect(edge1.addresses.openai).not.toBe(edge2.addresses.openai);
    const outsider: NatsConnection = await connect({ servers: nats.url });
    try {
      const recorded: Recorded[] = [];
      outsider.subscribe('>', {
        callback: (_error, msg) => {
          recorded.push({ subject: msg.subject, reply: msg.reply, data: msg.data.slice() });
        },
      });
      await outsider.flush();

      // A forwarded run (edge 2 has no node) and a live refresh asked of edge 1 that adds an API key.
      const before = backendChats();
      expect(await served(edge2, PROMPT)).toBe(true);
      expect(backendChats()).toBe(before + 1);
      expect((await chat(edge2, 'not yet', NEW_API_KEY)).status).toBe(401);
      const candidate = {
        ...config1,
        openai: { ...(config1.openai as Record<string, unknown>), api_keys: [API_KEY, NEW_API_KEY] },
      };
      const refresh = await admin1.refreshConfig({
        mode: 'apply',
        configYaml: JSON.stringify(candidate, null, 2),
        configPath: edge1.configPath,
      });
      expect({
        status: refresh.status,
        reports: refresh.reports.map((report) => report.reason),
      }).toMatchObject({
        status: 'applied',
      });
      // Applied on both edges, each on its own ports.
      const withNewKey = await chat(edge2, 'new key on edge 2', NEW_API_KEY);
      expect(withNewKey.status).toBe(200);
      await withNewKey.text();
      expect((await chat(edge1, 'new key on edge 1', NEW_API_KEY)).status).toBe(200);
      await outsider.flush();

      const subjects = new Set(recorded.map((entry) => entry.subject));
      expect([...subjects].some((subject) => subject === 'iop.run.edge-1')).toBe(true);
      expect([...subjects].some((subject) => subject === 'iop.refresh.edge-2')).toBe(true);
      const everything = Buffer.concat(recorded.map((entry) => Buffer.from(entry.data)));
      for (const secret of [PROMPT, FABRIC_TOKEN, API_KEY, NEW_API_KEY, BEARER, UPSTREAM_KEY]) {
        expect({ secret, found: everything.includes(Buffer.from(secret)) }).toEqual({ secret, found: false });
      }

      // Replays, a changed payload, a forged run and a forged node claim.
      const rejectedBefore = (await rejected(edge1)) + (await rejected(edge2));
      const chatsBefore = backendChats();
      const replayable = recorded.filter((entry) => !entry.subject.startsWith('$JS.'));
      for (const entry of replayable) {
        outsider.publish(entry.subject, entry.data, entry.reply ? { reply: entry.reply } : undefined);
      }
      for (const entry of replayable.filter((item) => item.subject.startsWith('iop.run.'))) {
        const changed = Buffer.from(entry.data);
        for (let index = 40; index < changed.length - 20; index += 7)
          changed[index] = (changed[index] ?? 0) ^ 0x20;
        outsider.publish(entry.subject, changed, entry.reply ? { reply: entry.reply } : undefined);
      }
      outsider.publish(
        'iop.run.edge-1',
        new TextEncoder().encode(
          JSON.stringify({
            forwardId: 'forged1',
            from: 'edge-2',
            destination: { kind: 'model', model: MODEL_LLAMA },
            spec: { session: { kind: 'slot', baseId: 'x' }, messages: [{ role: 'user', content: 'forged' }] },
            surface: 'openai',
          }),
        ),
        { reply: 'iop.events.edge-2.forged1' },
      );
      const kvm = new Kvm(outsider);
      await (
        await kvm.open('iop_nodes')
      ).put('node-a', JSON.stringify({ edgeId: 'edge-2', claimedAtUnixMs: Date.now() + 60_000 }));
      await outsider.flush();
      await new Promise((resolve) => setTimeout(resolve, 2000));

      expect(backendChats()).toBe(chatsBefore);
      expect((await rejected(edge1)) + (await rejected(edge2))).toBeGreaterThan(rejectedBefore);
      expect(node.running).toBe(true);
      expect((await admin1.listNodes()).map((info) => info.nodeId)).toContain('node-a');
      expect(node.stderr()).not.toContain('lost the link to the edge');
      // The fabric still forwards.
      expect(await served(edge2, 'after the outsider')).toBe(true);
      expect(backendChats()).toBe(chatsBefore + 1);
    } finally {
      await outsider.close();
    }
  });

  it('serves its own node while NATS is down, and forwards again once it is back', async () => {
    await nats.kill();
    const killedAt = Date.now();
    await waitUntil(() => served(edge1, 'local while NATS is down', 4000), 5000, 'edge 1 serving its node');
    const localMs = Date.now() - killedAt;
    await nats.restart();
    const backAt = Date.now();
    await waitUntil(() => served(edge2, 'forwarded after NATS came back', 4000), 20_000, 'forwarding again');
    const forwardMs = Date.now() - backAt;
    process.stdout.write(
      `closed fabric: local serving ${localMs} ms after the kill, forwarding ${forwardMs} ms after the restart\n`,
    );
    expect(localMs).toBeLessThan(5000);
    expect(forwardMs).toBeLessThan(20_000);
    expect(node.running).toBe(true);
  });
});
