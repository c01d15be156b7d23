// Issue 42 across processes: a model call that claims a parent run executing on another node is refused. A real
// edge and a real node n1 running an agent (the testkit fake CLI, `--model-calls 2 --think-ms 4000`: live for a
// few seconds between its calls); n2 is a crafted link client — registered with n2's own token like a real node,
// then sending the exact frames a malicious node would: ModelCallOpen naming n1's live agent run, and the HTTP
// request of a model call carrying that run's real secret (as if it had leaked). The edge refuses the call on the
// link (ModelCallClose `refused`, no byte of an answer), counts it as a rejected child run, the backend never
// sees it, and the agent's own calls over n1's link keep working.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { FakeServer } from '@iop/testkit';
import { envelope, FramedConnection, PROTOCOL_VERSION, type Envelope } from '@iop/wire';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  metricSum,
  ProcessGroup,
  scrapeMetrics,
  startEdgeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { FABRIC_TOKEN, MODEL_LLAMA } from '../support/fabric-config.js';
import { AGENT_MODEL, agentFabricConfig } from '../support/agent-fabric-config.js';
import { startAgentStream } from '../support/agent-stream.js';
import { startFabricNode, startFakeBackends, stopFabric } from '../support/fabric-setup.js';

jest.setTimeout(45_000);

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;

/** A node link driven frame by frame: registers as `nodeId`, answers heartbeats, records what the edge sends. */
class CraftedLink {
  readonly received: Envelope[] = [];
  private constructor(private readonly connection: FramedConnection) {}

  static async register(address: string, nodeId: string, token: string): Promise<CraftedLink> {
    const [host, port] = address.split(':');
    const socket = net.connect({ host, port: Number(port) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const link = new CraftedLink(new FramedConnection(socket));
    await link.connection.send(
      envelope.registerRequest({
        nodeId,
        token,
        agentVersion: '0.0.0-crafted',
        protocolVersion: PROTOCOL_VERSION,
        agentKind: 'iop-node',
        os: 'linux',
        arch: 'x64',
        hostname: 'crafted',
      }),
    );
    link.pump();
    await waitUntil(
      () => link.received.some((frame) => frame.msg?.$case === 'registerResponse'),
      10_000,
      'the registration answer',
    );
    const answer = link.received.find((frame) => frame.msg?.$case === 'registerResponse');
    if (answer?.msg?.$case !== 'registerResponse' || !answer.msg.registerResponse.accepted) {
      throw new Error(`registration refused: ${JSON.stringify(answer?.msg)}`);
    }
    return link;
  }

  send(frame: Envelope): Promise<void> {
    return this.connection.send(frame);
  }

  close(): Promise<unknown> {
    return this.connection.close('goodbye');
  }

  private pump(): void {
    void (async () => {
      for await (const frame of this.connection.messages()) {
        this.received.push(frame);
        if (frame.msg?.$case === 'heartbeatPing') {
          await this.connection
            .send(envelope.heartbeatPong(frame.msg.heartbeatPing.seq))
            .catch(() => undefined);
        }
      }
    })().catch(() => undefined);
  }
}

let forger: CraftedLink | undefined;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-agent-forged-');
  edge = await startEdgeProcess(
    group,
    dir,
    agentFabricConfig({
      dataDir: `${dir}/data`,
      node: { id: 'n1', ollamaUrl: ollama.url, vllmUrl: vllm.url },
      otherNodes: [{ id: 'n2', ollamaUrl: ollama.url, vllmUrl: vllm.url }],
      calls: 2,
      agentArgs: ['--think-ms', '4000'],
    }),
  );
  node = await startFabricNode(group, edge);
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 10_000 }, systemClock);
  // n1's providers (n2's never report: its link is the crafted one).
  await waitUntil(
    async () =>
      (await admin.listProviders())
        .filter((provider) => provider.nodeId === 'n1')
        .every((provider) => provider.status === 'ready'),
    30_000,
    () => `n1's providers ready\n${node.describe()}\n${edge.describe()}`,
  );
  forger = await CraftedLink.register(edge.addresses.transport, 'n2', FABRIC_TOKEN);
}, 60_000);

afterAll(async () => {
  await forger?.close();
  await stopFabric(group, admin, ollama, vllm);
});

function modelCallRequest(secret: string): Buffer {
  const body = JSON.stringify({ model: MODEL_LLAMA, messages: [{ role: 'user', content: 'forged call' }] });
  return Buffer.from(
    'POST /v1/chat/completions HTTP/1.1\r\n' +
      'Host: 127.0.0.1\r\n' +
      `Authorization: Bearer ${secret}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

describe('a child run claiming a parent on another node', () => {
  it('is refused on the link and counted, while the agent’s own calls go on', async () => {
    const link = forger as CraftedLink;
    const agent = await startAgentStream(edge.addresses.openai, AGENT_MODEL, 'forged parent');
    const [, , secret = ''] = await agent.waitForLine(/^MODEL_ENDPOINT (\S+) (\S+)$/);
    await agent.waitForLine(/^MODEL_CALL 1 200 \S/);
    // The agent run is live on n1 and has made a child: the parent the forged call names.
    const n1 = (await admin.listNodes()).find((entry) => entry.nodeId === 'n1');
    expect(n1?.agentRuns.map((run) => run.runId)).toContain(agent.runId);
    expect(secret).toMatch(/^iop-run-/);

    const samples = () => scrapeMetrics(edge.addresses.metrics);
    const rejectedBefore = metricSum(await samples(), 'iop_child_runs_total', { result: 'rejected' });
    const frames = () =>
      link.received.filter(
        (frame) =>
          (frame.msg?.$case === 'modelCallClose' && frame.msg.modelCallClose.callId === 'forged-1') ||
          (frame.msg?.$case === 'modelCallData' && frame.msg.modelCallData.callId === 'forged-1'),
      );
    await link.send(envelope.modelCallOpen('forged-1', agent.runId));
    await link.send(envelope.modelCallData('forged-1', modelCallRequest(secret)));
    await waitUntil(() => frames().length > 0, 10_000, 'the edge’s answer to the forged call');
    // Give a late answer a moment to show up: there must be none.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const answer = frames();
    expect(answer).toHaveLength(1);
    expect(answer[0]?.msg).toEqual({
      $case: 'modelCallClose',
      modelCallClose: { callId: 'forged-1', reason: 'refused' },
    });
    expect(metricSum(await samples(), 'iop_child_runs_total', { result: 'rejected' })).toBe(
      rejectedBefore + 1,
    );
    // The forged call never reached the backend (the agent's own second call may have, after its think time).
    expect(ollama.requests.filter((request) => request.rawBody.includes('forged call'))).toEqual([]);

    // The agent, on its own node, goes on: its second call is answered and its run completes.
    const ended = await agent.ended;
    expect(ended.error).toBeUndefined();
    expect(agent.lines().filter((line) => /^MODEL_CALL \d 200 \S/.test(line))).toHaveLength(2);
    expect(agent.lines()).toContain('MODEL_CALLS_DONE');
  });
});
