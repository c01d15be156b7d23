// The agent-fabric phase (issue 42, `node bench/agents.mjs`, `node bench/run.mjs --agents`): agent runs whose model
// calls travel over the fabric. An agent is the testkit fake CLI in its `--model-calls M --think-ms T
// --call-timings` mode, a one-shot profile with `fabric_model: bench-model`: each of its M calls goes to its run's
// node-loopback endpoint, over the node's link into the edge's OpenAI listener, as a child run of the agent run,
// to the bench fake backend (fixed latency) behind an openai_compat provider. A agent runs are sent at once
// (non-streaming chat completions of the agent model); each one's wall time is measured from the client, each
// model call's from inside the agent (MODEL_CALL_MS); a call's time minus the backend's latency is what the fabric
// added (the child's queue wait plus its path).
//   (a) tight: one node with max_concurrency 2, the model's provider capacity 2, 4 agents × 5 calls (the
//       issue's pathological capacities: without child-run admission the calls wait on node slots their parents
//       hold). All must complete.
//   (b) co-placement: two nodes. Node A has the model's backend (provider capacity 8, max_concurrency 8); node B
//       has no provider of the model and reaches the edge over a link that adds `linkDelayMs` each way (a TCP
//       relay in this process delays every chunk), i.e. a node elsewhere. Two agent models serve the same profile:
//       `bench-agent-a` only on node A (co-placed with its model), `bench-agent-b` only on node B (its calls cross
//       B's link both ways and are served by A's provider) — placement forced by config. Rounds alternate A and
//       B (the order reversed every other round) in one window; after each round, A×M sequential top-level calls of
//       the model from this process (no agent, no loopback endpoint, no child run) give the plain call's cost.
import net from 'node:net';
import path from 'node:path';
import { summarize } from './load.mjs';
import { startProcess } from './processes.mjs';
import { ratio, summarizeAgentRuns } from './agent-fabric-summary.mjs';
import { MODEL, repoRoot, startEdgeFromConfig, tempDir, waitServing, writeEdgeConfig } from './topology.mjs';

const nodeMain = path.join(repoRoot, 'apps/node/dist/main.js');
const fakeCli = path.join(repoRoot, 'bin/iop-fake-cli');
const TOKEN = 'bench-agent-node-token';

/** The phase's shape (full and `--quick`). */
export function agentFabricShape(quick, linkDelayMs = 5) {
  return {
    backendMs: 20,
    thinkMs: 50,
    tight: { agents: 4, calls: 5, maxConcurrency: 2, modelCapacity: 2 },
    coPlacement: { agents: 4, calls: 5, rounds: quick ? 2 : 4, linkDelayMs, modelCapacity: 8 },
  };
}

function agentInstance({ calls, thinkMs }) {
  return {
    name: 'agents',
    type: 'cli',
    enabled: true,
    fabric_model: MODEL,
    profiles: {
      fab: {
        command: fakeCli,
        mode: 'oneshot',
        args: ['--model-calls', String(calls), '--think-ms', String(thinkMs), '--call-timings'],
        env: {
          IOP_MODEL_BASE_URL: '{model_base_url}',
          IOP_MODEL_API_KEY: '{model_api_key}',
          IOP_MODEL: '{model}',
        },
        request_timeout_ms: 120_000,
      },
    },
  };
}

function nodeEntry({ id, maxConcurrency, backendUrl, modelCapacity, agents }) {
  const instances = [];
  const providers = [];
  if (backendUrl) {
    instances.push({
      name: 'backend',
      type: 'openai_compat',
      provider: 'vllm',
      base_url: `${backendUrl}/v1`,
      request_timeout_ms: 60_000,
    });
    providers.push({
      id: `${id}-model`,
      type: 'vllm',
      category: 'api',
      adapter: 'backend',
      models: [MODEL],
      capacity: modelCapacity,
      max_queue: 1000,
      queue_timeout_ms: 120_000,
    });
  }
  if (agents) {
    instances.push(agentInstance(agents));
    providers.push({
      id: `${id}-agents`,
      type: 'cli',
      category: 'cli',
      adapter: 'agents',
      models: ['fab'],
      capacity: agents.capacity,
      max_queue: 64,
      queue_timeout_ms: 120_000,
    });
  }
  return {
    id,
    token: TOKEN,
    runtime: { max_concurrency: maxConcurrency, health_probe_interval_ms: 0 },
    adapters: { instances },
    providers,
  };
}

async function startNode(id, edgeAddress) {
  const dataDir = await tempDir(`iop-bench-${id}-`);
  return startProcess({
    name: id,
    script: nodeMain,
    args: ['run', '--edge', edgeAddress, '--node-id', id, '--data-dir', dataDir, '--log-level', 'warn'],
    env: { IOP_NODE_TOKEN: TOKEN },
  });
}

/** A TCP relay to `target` (host:port) that holds every chunk `delayMs` in each direction (order kept). */
export function startDelayRelay(target, delayMs) {
  const [host, port] = target.replace(/^\w+:\/\//, '').split(':');
  const sockets = new Set();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(Number(port), host);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    const pipe = (from, to) => {
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on('end', () => setTimeout(() => to.end(), delayMs));
    };
    pipe(inbound, outbound);
    pipe(outbound, inbound);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        address: `127.0.0.1:${server.address().port}`,
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** One agent run: `{ status, wallMs, answer }`. */
async function agentRun(openaiUrl, model, index) {
  const started = performance.now();
  try {
    const response = await fetch(`${openaiUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: `agent ${index}` }] }),
      signal: AbortSignal.timeout(180_000),
    });
    const body = await response.json().catch(() => ({}));
    return {
      status: response.status,
      wallMs: performance.now() - started,
      answer: body.choices?.[0]?.message?.content ?? JSON.stringify(body.error ?? body),
    };
  } catch (error) {
    return { status: 0, wallMs: performance.now() - started, answer: String(error?.message ?? error) };
  }
}

/**
 * `count` sequential top-level calls of the model through the edge from this process (no agent, no loopback
 * endpoint, no child run), alternately streamed and not as the agents' calls are: each call's ms, for a baseline.
 */
async function plainCalls(openaiUrl, count) {
  const times = [];
  for (let index = 1; index <= count; index += 1) {
    const started = performance.now();
    const response = await fetch(`${openaiUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        stream: index % 2 === 1,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    await response.arrayBuffer();
    if (response.ok) times.push(performance.now() - started);
  }
  return times;
}

const agentBatch = (openaiUrl, model, count) =>
  Promise.all(Array.from({ length: count }, (_, index) => agentRun(openaiUrl, model, index)));

/** Waits until `model`'s agent answers one run (its node registered, the CLI provider ready). */
async function warmAgent(openaiUrl, model, calls) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [run] = await agentBatch(openaiUrl, model, 1);
    if (summarizeAgentRuns([run], { calls, backendMs: 0 }).agent_runs_completed === 1) return;
    if (Date.now() > deadline) throw new Error(`agent model ${model} never completed a run: ${run.answer}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function startBackend(latencyMs) {
  const backend = await startProcess({
    name: 'agent-backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', String(latencyMs)],
    ready: /BACKEND_URL=(\S+)/,
  });
  return { ...backend, url: backend.match[1] };
}

/** (a) The capacities: node max_concurrency 2, model capacity 2, 4 agents × 5 calls at once. */
async function tightRun(shape, log) {
  const { agents, calls, maxConcurrency, modelCapacity } = shape.tight;
  const backend = await startBackend(shape.backendMs);
  const started = [backend];
  try {
    const config = await writeEdgeConfig({
      prefix: 'iop-bench-agents-tight-',
      nodes: [
        nodeEntry({
          id: 'agent-node',
          maxConcurrency,
          backendUrl: backend.url,
          modelCapacity,
          agents: { calls, thinkMs: shape.thinkMs, capacity: agents },
        }),
      ],
      models: [
        { id: MODEL, providers: { 'agent-node-model': MODEL } },
        { id: 'bench-agent', providers: { 'agent-node-agents': 'fab' } },
      ],
    });
    const edge = await startEdgeFromConfig('edge-agents-tight', config);
    started.push(edge);
    started.push(await startNode('agent-node', edge.addresses['node transport']));
    await waitServing(edge.addresses.openai);
    await warmAgent(edge.addresses.openai, 'bench-agent', calls);
    log(`agents (a): ${agents} agents × ${calls} calls on a node of max_concurrency ${maxConcurrency}`);
    const runs = await agentBatch(edge.addresses.openai, 'bench-agent', agents);
    const summary = summarizeAgentRuns(runs, { calls, backendMs: shape.backendMs });
    const failed = runs.find((run) => run.status !== 200);
    return failed ? { ...summary, first_failure: failed.answer.slice(0, 300) } : summary;
  } finally {
    for (const handle of started.reverse()) await handle.stop();
  }
}

/** (b) Agent co-placed with its model's provider (node A) against an agent on a node elsewhere (node B). */
async function coPlacementRun(shape, log) {
  const { agents, calls, rounds, linkDelayMs, modelCapacity } = shape.coPlacement;
  const backend = await startBackend(shape.backendMs);
  const started = [backend];
  let relay;
  try {
    const agentSettings = { calls, thinkMs: shape.thinkMs, capacity: agents };
    const config = await writeEdgeConfig({
      prefix: 'iop-bench-agents-place-',
      nodes: [
        nodeEntry({
          id: 'node-a',
          maxConcurrency: 8,
          backendUrl: backend.url,
          modelCapacity,
          agents: agentSettings,
        }),
        nodeEntry({ id: 'node-b', maxConcurrency: 8, agents: agentSettings }),
      ],
      models: [
        { id: MODEL, providers: { 'node-a-model': MODEL } },
        { id: 'bench-agent-a', providers: { 'node-a-agents': 'fab' } },
        { id: 'bench-agent-b', providers: { 'node-b-agents': 'fab' } },
      ],
    });
    const edge = await startEdgeFromConfig('edge-agents-place', config);
    started.push(edge);
    relay = await startDelayRelay(edge.addresses['node transport'], linkDelayMs);
    started.push(await startNode('node-a', edge.addresses['node transport']));
    started.push(await startNode('node-b', relay.address));
    const url = edge.addresses.openai;
    await waitServing(url);
    await warmAgent(url, 'bench-agent-a', calls);
    await warmAgent(url, 'bench-agent-b', calls);
    const byNode = { a: [], b: [] };
    const plain = [];
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
      for (const side of order) byNode[side].push(...(await agentBatch(url, `bench-agent-${side}`, agents)));
      plain.push(...(await plainCalls(url, agents * calls)));
      log(`agents (b): round ${round + 1}/${rounds} done`);
    }
    const on = summarizeAgentRuns(byNode.a, { calls, backendMs: shape.backendMs });
    const off = summarizeAgentRuns(byNode.b, { calls, backendMs: shape.backendMs });
    const plainSummary = summarize(plain);
    return {
      link_delay_ms_each_way: linkDelayMs,
      // Top-level calls of the model from the bench process, between the rounds: what a call costs without the
      // agent's loopback endpoint and child run (the same edge, node A, backend).
      plain_call_p50_ms: Math.round(plainSummary.p50 * 100) / 100,
      plain_call_p99_ms: Math.round(plainSummary.p99 * 100) / 100,
      rounds,
      on,
      off,
      wall_p50_off_over_on: ratio(off.agent_wall_p50_ms, on.agent_wall_p50_ms),
      later_call_p50_off_minus_on_ms:
        on.later_call_p50_ms === null || off.later_call_p50_ms === null
          ? null
          : Math.round((off.later_call_p50_ms - on.later_call_p50_ms) * 100) / 100,
      call_p50_off_minus_on_ms:
        on.call_p50_ms === null || off.call_p50_ms === null
          ? null
          : Math.round((off.call_p50_ms - on.call_p50_ms) * 100) / 100,
    };
  } finally {
    for (const handle of started.reverse()) await handle.stop();
    await relay?.close();
  }
}

/** Both parts on their own processes: `{ shape, tight, co_placement }`. */
export async function agentFabricPhase({ quick = false, linkDelayMs = 5, log = () => undefined } = {}) {
  const shape = agentFabricShape(quick, linkDelayMs);
  const tight = await tightRun(shape, log);
  const coPlacement = await coPlacementRun(shape, log);
  return { shape, tight, co_placement: coPlacement };
}

/** Rows for the printed table: `[measure, value, note]`. */
export function formatAgentFabricRows(result) {
  if (!result || result.error) return [['agents', 'failed', result?.error ?? 'not run']];
  const { tight, co_placement: place, shape } = result;
  const f = (value) => (value === null || value === undefined ? '-' : String(value));
  return [
    [
      'agents (a) completed',
      `${tight.agent_runs_completed}/${tight.agent_runs}`,
      `node max_concurrency ${shape.tight.maxConcurrency}, ${shape.tight.agents}×${shape.tight.calls} calls`,
    ],
    ['agents (a) wall p50/p99 ms', `${f(tight.agent_wall_p50_ms)} / ${f(tight.agent_wall_p99_ms)}`, ''],
    [
      'agents (a) call added p50/p99 ms',
      `${f(tight.call_added_p50_ms)} / ${f(tight.call_added_p99_ms)}`,
      'call − backend: child queue wait + path',
    ],
    [
      'agents (b) on: wall p50/p99 ms',
      `${f(place.on.agent_wall_p50_ms)} / ${f(place.on.agent_wall_p99_ms)}`,
      `${place.on.agent_runs_completed}/${place.on.agent_runs} completed`,
    ],
    [
      'agents (b) off: wall p50/p99 ms',
      `${f(place.off.agent_wall_p50_ms)} / ${f(place.off.agent_wall_p99_ms)}`,
      `${place.off.agent_runs_completed}/${place.off.agent_runs} completed, link +${place.link_delay_ms_each_way} ms each way`,
    ],
    [
      'agents (a) later call added p50/p99 ms',
      `${f(tight.later_call_added_p50_ms)} / ${f(tight.later_call_added_p99_ms)}`,
      'calls 2..5 (the first also pays the CLI process’s first fetch)',
    ],
    [
      'agents (b) later call p50 on / off ms',
      `${f(place.on.later_call_p50_ms)} / ${f(place.off.later_call_p50_ms)}`,
      'calls 2..5',
    ],
    [
      'agents (b) call p50 on / off ms',
      `${f(place.on.call_p50_ms)} / ${f(place.off.call_p50_ms)}`,
      `wall p50 off/on ${f(place.wall_p50_off_over_on)}`,
    ],
    [
      'agents (b) plain call p50/p99 ms',
      `${f(place.plain_call_p50_ms)} / ${f(place.plain_call_p99_ms)}`,
      `top-level, no agent; backend ${shape.backendMs} ms`,
    ],
  ];
}
