// Cross-process end to end of the fabric hardening (issue 43, parts 1 and 2), beside closed-fabric.test.ts: a real
// nats-server, edge-1 with node-a (a real node) and edge-2 without a node, whose wall clock runs 20 s ahead
// (within the accepted skew). An outsider — a plain NATS client without the fabric key — then:
//   1. records a run edge-2 forwards to edge-1, waits until edge-1 restarted (a new process, which remembers no
//      nonce) and replays the recording: the forward is stamped after the restart (edge-2's clock), yet it names
//      edge-1's earlier boot id, so no backend is called, nothing is sealed in answer, and edge-1 counts a replay;
//   2. answers every fabric request with an empty 503 "no responders" status: a key with rpm 3 still gets at most
//      3 of 24 chats over both edges (a home edge that "does not answer" no longer lets runs be counted locally),
//      and forwards still reach their owner.
// Skipped with one printed line when nats-server is missing (`.ci/run` installs it).
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { startFakeOllama, startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../../src/test-support/nats-server.js';
import {
  clockOffsetEnv,
  freePort,
  metricSum,
  ProcessGroup,
  scrapeMetrics,
  sleep,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import {
  MODEL_LLAMA,
  OLLAMA_SERVED,
  clusterSection,
  fabricConfig,
  ollamaProviderId,
  writeFabricKeyFile,
} from '../support/fabric-config.js';
import { startFabricNode } from '../support/fabric-setup.js';

jest.setTimeout(180_000);

const available = natsServerAvailable('fabric hardening e2e');
const suite = available ? describe : describe.skip;

const API_KEY = 'sk-e2e-fabric-hardening-0001';
const KEY_RPM = 'sk-e2e-fabric-hardening-rpm-3';
const PROMPT = 'prompt recorded before the restart 0005';
/** Edge-2's clock: ahead of edge-1's, within the accepted skew (30 s). */
const CLOCK_AHEAD_MS = 20_000;

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
let node: TestProcess;
let dir1: string;
let config1: Record<string, unknown>;

async function edgeConfig(edgeId: string, dir: string): Promise<Record<string, unknown>> {
  const base = fabricConfig({
    dataDir: `${dir}/data`,
    nodes: [{ id: 'node-a', ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 4 }],
  });
  const listen = async () => `127.0.0.1:${await freePort()}`;
  return {
    ...base,
    edge: { ...(base.edge as Record<string, unknown>), id: edgeId, listen: await listen() },
    metrics: { enabled: true, listen: await listen() },
    refresh: { enabled: false, listen: await listen() },
    bootstrap: { listen: await listen() },
    openai: {
      enabled: true,
      listen: await listen(),
      timeout_sec: 60,
      api_keys: [
        { id: 'plain', key: API_KEY },
        { id: 'rpm-3', key: KEY_RPM, rpm: 3 },
      ],
    },
    cluster: clusterSection(nats.url, writeFabricKeyFile(dir)),
  };
}

interface Answer {
  status: number;
  provider: string | null;
}

async function chat(edge: EdgeProcess, text: string, key = API_KEY, timeoutMs = 15_000): Promise<Answer> {
  const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: MODEL_LLAMA, messages: [{ role: 'user', content: text }] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  await response.text();
  return { status: response.status, provider: response.headers.get('x-iop-provider') };
}

/** A chat that came back 200 from node-a's provider (on edge 2: forwarded to edge 1). */
async function served(edge: EdgeProcess, text: string, timeoutMs?: number): Promise<boolean> {
  try {
    const answer = await chat(edge, text, API_KEY, timeoutMs);
    return answer.status === 200 && answer.provider === ollamaProviderId('node-a');
  } catch {
    return false;
  }
}

function backendChats(): number {
  return ollama.requests.filter((request) => request.path === '/api/chat').length;
}

async function replays(edge: EdgeProcess): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_cluster_rejected_total', {
    reason: 'replay',
  });
}

suite('fabric hardening: replays across a restart, forged "no responders"', () => {
  beforeAll(async () => {
    nats = await startNatsServer();
    ollama = await startFakeOllama({
      behavior: { models: [OLLAMA_SERVED], tokenCount: 3, tokenDelayMs: 10 },
    });
    vllm = await startFakeOpenAI({ behavior: { models: ['unused'] } });
    dir1 = await group.tempDir('iop-e2e-hardening-edge-1-');
    const dir2 = await group.tempDir('iop-e2e-hardening-edge-2-');
    config1 = await edgeConfig('edge-1', dir1);
    edge1 = await startEdgeProcess(group, dir1, config1, 'edge-1');
    edge2 = await startEdgeProcess(
      group,
      dir2,
      await edgeConfig('edge-2', dir2),
      'edge-2',
      'serve',
      clockOffsetEnv(CLOCK_AHEAD_MS),
    );
    node = await startFabricNode(group, edge1, { nodeId: 'node-a' });
    await waitUntil(
      () => served(edge2, 'warm up'),
      60_000,
      () => `edge-2 forwarding\n${edge2.describe()}\n${edge1.describe()}`,
    );
  }, 120_000);

  afterAll(async () => {
    await group.close();
    await ollama?.close();
    await vllm?.close();
    await nats?.stop();
  });

  it('a forward recorded before the owner restarted and replayed after it reaches no backend and is not answered', async () => {
    const outsider: NatsConnection = await connect({ servers: nats.url });
    try {
      const recorded: Recorded[] = [];
      outsider.subscribe('>', {
        callback: (_error, msg) => {
          recorded.push({ subject: msg.subject, reply: msg.reply, data: msg.data.slice() });
        },
      });
      await outsider.flush();
      const before = backendChats();
      expect(await served(edge2, PROMPT)).toBe(true);
      expect(backendChats()).toBe(before + 1);
      const recordedAt = Date.now();
      await outsider.flush();
      const forwards = recorded.filter((entry) => entry.subject === 'iop.run.edge-1');
      expect(forwards).toHaveLength(1);

      // Edge-1 restarts: a new process, a new boot id, no nonce of its earlier life.
      await edge1.stop('SIGTERM', 5000);
      edge1 = await startEdgeProcess(group, dir1, config1, 'edge-1');
      const restartMs = Date.now() - recordedAt;
      // Node-a reconnects, and edge-2 forwards again once it has read edge-1's new boot id.
      await waitUntil(
        () => served(edge2, 'after the restart', 4000),
        60_000,
        () => `edge-2 forwarding to the restarted edge-1\n${edge1.describe()}\n${edge2.describe()}`,
      );

      const replaysBefore = await replays(edge1);
      const chatsBefore = backendChats();
      const replayedFrom = recorded.length;
      for (const entry of forwards) {
        outsider.publish(entry.subject, entry.data, entry.reply ? { reply: entry.reply } : undefined);
      }
      await outsider.flush();
      // Time for a run to reach the backend, had the replay been taken (the first run took milliseconds).
      await sleep(2000);
      const replayMs = Date.now() - recordedAt;
      process.stdout.write(
        `fabric hardening: edge-1 restarted ${restartMs} ms and the forward was replayed ${replayMs} ms after ` +
          `it was recorded (stamped ${CLOCK_AHEAD_MS} ms ahead)\n`,
      );
      expect(backendChats()).toBe(chatsBefore);
      // Nothing was sealed in answer: no message on the replayed forward's reply subject.
      const replies = new Set(forwards.map((entry) => entry.reply));
      expect(recorded.slice(replayedFrom).filter((entry) => replies.has(entry.subject))).toEqual([]);
      // Dropped and counted as a replay (it names edge-1's earlier boot id).
      expect(await replays(edge1)).toBeGreaterThanOrEqual(replaysBefore + forwards.length);
      expect(node.running).toBe(true);
    } finally {
      await outsider.close();
    }
  });

  it('forged "no responders" on every request: rpm 3 admits at most 3 of 24 chats, forwards still reach the owner', async () => {
    const outsider: NatsConnection = await connect({ servers: nats.url });
    let forged = 0;
    try {
      // Every fabric request (forwards, limit reservations, peer calls) gets an empty 503 on its reply subject, as
      // the server sends when nothing listens.
      outsider.subscribe('iop.>', {
        callback: (_error, msg) => {
          if (!msg.reply) return;
          forged += 1;
          outsider.publish(msg.reply, new Uint8Array(0), { headers: natsHeaders(503, 'No Responders') });
        },
      });
      await outsider.flush();
      const answers: Answer[] = [];
      for (let index = 0; index < 24; index += 1) {
        answers.push(await chat(index % 2 === 0 ? edge1 : edge2, `rpm ${index}`, KEY_RPM));
      }
      const admitted = answers.filter((answer) => answer.status === 200);
      expect(admitted).toHaveLength(3);
      expect(answers.filter((answer) => answer.status === 429)).toHaveLength(21);
      // Every admitted chat ran on node-a, those sent to edge-2 forwarded to edge-1 through the forged statuses.
      for (const answer of admitted) expect(answer.provider).toBe(ollamaProviderId('node-a'));
      expect(
        answers.filter((answer, index) => index % 2 === 1 && answer.status === 200).length,
      ).toBeGreaterThan(0);
      expect(await served(edge2, 'forwarded through forged statuses')).toBe(true);
      expect(forged).toBeGreaterThan(0);
    } finally {
      await outsider.close();
    }
  });
});
