#!/usr/bin/env node
// `pnpm bench`: measures what the IOP path costs against calling the backend directly, in one run on loopback.
// Starts a fixed-latency fake backend, an edge and a node (real processes from the built workspace), then:
//   1. non-streaming chat completions at fixed open-loop rates (100 and 500 req/s): p50/p95/p99 of both paths and
//      the latency the IOP path adds; then the tail phase: p99 and p99.9 at 500 req/s of direct, two plain relays
//      (the floor of any two-process relay here) and IOP in alternating rounds, IOP's added tail against the relays';
//   2. saturation throughput of both paths (autocannon, closed loop) and their ratio;
//   3. streaming: time to first token and tokens/s through one long stream and through 100 concurrent streams;
//   4. 10,000 simulated nodes (real wire protocol, --nodes N) on a fresh edge with the bench node: register time,
//      RSS, a minute of heartbeats with requests through the real node (x-iop-overhead-ms), nobody dropped;
//   5. the node's run history: events/s written;
//   6. cluster mode: two edges over nats-server, the node on one; a run sent to the other edge is forwarded over
//      NATS: p50 at 100 req/s of forwarded minus local (skipped when nats-server is missing);
//   7. conversation affinity: four prefix-cache backends as four providers of one model, a multi-turn agent
//      workload with models[].affinity off and on: TTFT p50/p99 and the hit rate (after everything else, on its
//      own processes, so the phases before it run as they did);
//   8. with --agents, agents on the fabric (issue 42; bench/lib/agent-fabric-phase.mjs, alone: bench/agents.mjs):
//      4 agents × 5 model calls on a node of max_concurrency 2, and an agent co-placed with its model's provider
//      against one on a node across a delayed link: runs completed, agent wall p50/p99, what a call's child run added.
// Prints one table and writes bench/results/latest.json. Flags: --quick (short phases, for trying changes),
// --latency-ms N (backend latency, default 10), --out FILE, --agents (phase 8).
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { affinityPhase, formatAffinityRows } from './lib/affinity-phase.mjs';
import { agentFabricPhase, formatAgentFabricRows } from './lib/agent-fabric-phase.mjs';
import { measureHistory } from './lib/history-bench.mjs';
import { startNats } from './lib/nats.mjs';
import { fixedRate, maxThroughput, stream, summarize } from './lib/load.mjs';
import { checkOpenFiles, manyNodesPhase } from './lib/many-nodes.mjs';
import { cpuDuring, startProcess, stopAll } from './lib/processes.mjs';
import { startRelayChain } from './lib/relays.mjs';
import { tailPhase } from './lib/tail-phase.mjs';
import {
  MODEL,
  removeTempDirs,
  repoRoot,
  startClusterPair,
  startIopPath,
  tempDir,
  waitServing,
} from './lib/topology.mjs';
import { existsSync } from 'node:fs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'latency-ms': { type: 'string', default: '10' },
    out: { type: 'string', default: path.join(repoRoot, 'bench/results/latest.json') },
    nodes: { type: 'string', default: '10000' },
    agents: { type: 'boolean', default: false },
  },
});
const quick = flags.quick;
const latencyMs = Number(flags['latency-ms']);
const nodeCount = Number(flags.nodes);
const phaseMs = quick ? 3000 : 10_000;
const throughputS = quick ? 3 : 8;

for (const built of ['apps/edge/dist/main.js', 'apps/node/dist/main.js', 'packages/wire/dist/index.js']) {
  if (!existsSync(path.join(repoRoot, built))) {
    process.stderr.write(`${built} is missing: build first (pnpm exec turbo run build)\n`);
    process.exit(1);
  }
}

const log = (text) => process.stderr.write(`[bench] ${text}\n`);
const chatBody = (extra = {}) =>
  JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16, ...extra });

/** `/metrics` of a listener announced as `host:port` or as a URL. */
async function scrape(address) {
  const base = address.startsWith('http') ? address : `http://${address}`;
  return (await fetch(`${base}/metrics`)).text();
}

async function scrapeOverhead(metricsUrl) {
  const text = await scrape(metricsUrl);
  const sum = Number(/^iop_overhead_seconds_sum\{surface="openai"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
  const count = Number(/^iop_overhead_seconds_count\{surface="openai"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
  return { meanMs: (sum / count) * 1000, count };
}

/** x-iop-overhead-ms of a few sequential requests (what a client sees), median. */
async function sampleOverheadHeader(openaiUrl, samples) {
  const values = [];
  for (let index = 0; index < samples; index += 1) {
    const response = await fetch(`${openaiUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody(),
    });
    await response.arrayBuffer();
    values.push(Number(response.headers.get('x-iop-overhead-ms')));
  }
  return summarize(values);
}

async function streamPhase(baseUrl, label) {
  const url = `${baseUrl}/v1/chat/completions`;
  // Time to first token: sequential short streams.
  const ttfts = [];
  for (let index = 0; index < (quick ? 10 : 30); index += 1) {
    const result = await stream({ url, body: chatBody({ stream: true, max_tokens: 16 }) });
    ttfts.push(result.ttftMs);
  }
  // One long stream, best of three (a single stream is sensitive to what else the machine does).
  const singleTokens = quick ? 20_000 : 50_000;
  const singles = [];
  for (let index = 0; index < 3; index += 1) {
    singles.push(await stream({ url, body: chatBody({ stream: true, max_tokens: singleTokens }) }));
  }
  const single = singles.reduce((best, next) => (next.tokensPerS > best.tokensPerS ? next : best));
  const streamsWithOverhead = singles.filter((result) => result.overheadHeader !== undefined).length;
  // 100 concurrent streams.
  const concurrentTokens = quick ? 500 : 2000;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
  const many = await Promise.all(
    Array.from({ length: 100 }, () =>
      stream({ url, agent, body: chatBody({ stream: true, max_tokens: concurrentTokens }) }),
    ),
  );
  agent.destroy();
  const tokens = many.reduce((sum, next) => sum + next.tokens, 0);
  const firstStart = Math.min(...many.map((result) => result.startAt));
  const lastEnd = Math.max(...many.map((result) => result.endAt));
  const incomplete = many.filter((result) => result.tokens !== concurrentTokens).length;
  if (single.tokens !== singleTokens || incomplete > 0)
    log(
      `${label}: token count mismatch (single ${single.tokens}/${singleTokens}, ${incomplete} short streams)`,
    );
  return {
    ttft: summarize(ttfts),
    single: {
      tokens: single.tokens,
      tokensPerS: single.tokensPerS,
      ttftMs: single.ttftMs,
      overheadHeader: single.overheadHeader ?? null,
      overheadTrailer: single.overheadTrailer ?? null,
      streamsWithOverheadHeader: streamsWithOverhead,
    },
    concurrent: {
      streams: many.length,
      tokensPerStream: concurrentTokens,
      tokensPerS: tokens / ((lastEnd - firstStart) / 1000),
      ttft: summarize(many.map((result) => result.ttftMs)),
    },
  };
}

async function main() {
  // Before anything else: the many-node phase needs a descriptor per node in the edge and in the simulator.
  checkOpenFiles(nodeCount);
  const startedAt = new Date();
  const loadAverageAtStart = os.loadavg()[0];
  log(`backend latency ${latencyMs} ms, ${quick ? 'quick' : 'full'} run`);
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', String(latencyMs)],
    ready: /BACKEND_URL=(\S+)/,
  });
  const backendUrl = backend.match[1];
  const iop = await startIopPath({ backendUrl });
  await waitServing(iop.openaiUrl);
  log(`edge ${iop.openaiUrl}, node pid ${iop.node.pid}, backend ${backendUrl}`);
  const paths = { direct: `${backendUrl}/v1/chat/completions`, iop: `${iop.openaiUrl}/v1/chat/completions` };

  // Warm-up at the measured rate, long enough for V8 to finish optimizing: the IOP path's processes have far more
  // code to compile than the backend, and on two shared cores their TurboFan threads took 30-45 % of the machine
  // in bursts until ~1,500 requests in, which then made up most of a 10 s phase's slowest 1 % (bench/README.md,
  // round 5). Both paths get the same warm-up; the transient after a start is reported there, not hidden.
  log('warm-up');
  for (const url of Object.values(paths))
    await fixedRate({ url, body: chatBody(), rate: 500, durationMs: quick ? 3000 : 8000 });

  const rates = {};
  for (const rate of [100, 500]) {
    rates[rate] = {};
    for (const [name, url] of Object.entries(paths)) {
      log(`fixed rate ${rate} req/s, ${name}`);
      rates[rate][name] = await fixedRate({ url, body: chatBody(), rate, durationMs: phaseMs });
    }
  }

  // The tail against the two-relay floor (issue 46): the same client, in alternating rounds, times direct, two
  // plain relays and IOP at 500 req/s; p99 and p99.9 added are IOP's tail the day it is measured, next to what
  // any two-process relay adds on this machine in the same minutes.
  log('tail: p99 / p99.9 against two plain relays');
  const relays = await startRelayChain(backendUrl);
  const tail = await tailPhase({
    urls: { direct: paths.direct, relays: `${relays.two.url}/v1/chat/completions`, iop: paths.iop },
    body: chatBody(),
    rate: 500,
    rounds: quick ? 2 : 3,
    durationMs: quick ? 3000 : 6000,
    warmupMs: quick ? 2000 : 4000,
    log,
  });
  await relays.two.stop();
  await relays.one.stop();

  // CPU per request (user + system of each process over the saturation phase) hardly depends on what else the
  // machine runs, unlike throughput: it is the number to compare between builds on a shared machine.
  const throughput = {};
  const processesOf = { direct: { backend }, iop: { backend, edge: iop.edge, node: iop.node } };
  for (const [name, url] of Object.entries(paths)) {
    log(`max throughput, ${name}`);
    const { result, spent } = await cpuDuring(processesOf[name], () =>
      maxThroughput({ url, body: chatBody(), connections: 64, durationS: throughputS }),
    );
    throughput[name] = result;
    throughput[name].cpuMsPerRequest = Object.fromEntries(
      Object.entries(spent).map(([role, ms]) => [role, ms / Math.max(1, result.total)]),
    );
  }

  const streaming = {};
  for (const [name, url] of Object.entries({ direct: backendUrl, iop: iop.openaiUrl })) {
    log(`streaming, ${name}`);
    streaming[name] = await streamPhase(url, name);
  }

  log('cluster: forwarded vs local run');
  const cluster = await clusterPhase(backendUrl);

  const overheadHeader = await sampleOverheadHeader(iop.openaiUrl, 50);
  const overheadMetric = await scrapeOverhead(iop.metricsUrl);
  const edgeRssAfterLoadMb = iop.edge.rssMb();
  const nodeRssAfterLoadMb = iop.node.rssMb();
  await iop.node.stop();
  await iop.edge.stop();

  log(`${nodeCount} simulated nodes`);
  const nodes = await manyNodesPhase({
    count: nodeCount,
    backendUrl,
    holdMs: quick ? 10_000 : 60_000,
    baselineMs: quick ? 2000 : 5000,
    rate: 100,
    log,
  });
  await backend.stop();

  log('node history');
  const history = measureHistory({
    dir: await tempDir('iop-bench-history-'),
    runs: quick ? 50 : 200,
    eventsPerRun: 500,
  });

  log('conversation affinity');
  // The last phase: a failure here is reported in its place, and everything measured before is still written.
  let affinity;
  try {
    affinity = await affinityPhase({ quick, log });
  } catch (error) {
    log(`affinity phase failed: ${error instanceof Error ? error.stack : String(error)}`);
    affinity = { error: error instanceof Error ? error.message : String(error) };
  }

  // Phase 8, optional (--agents): on its own processes, after everything else.
  let agents = null;
  if (flags.agents) {
    log('agents on the fabric');
    try {
      agents = await agentFabricPhase({ quick, log });
    } catch (error) {
      log(`agents phase failed: ${error instanceof Error ? error.stack : String(error)}`);
      agents = { error: error instanceof Error ? error.message : String(error) };
    }
  }

  const at500 = rates[500];
  const result = {
    date: startedAt.toISOString(),
    machine: {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      memory_gb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      load_average_at_start: loadAverageAtStart,
    },
    quick,
    backend_latency_ms: latencyMs,
    added_p50_ms: at500.iop.p50 - at500.direct.p50,
    added_p95_ms: at500.iop.p95 - at500.direct.p95,
    added_p99_ms: at500.iop.p99 - at500.direct.p99,
    // The tail phase: IOP − direct and 2 relays − direct at 500 req/s (pooled rounds), and IOP's share over the relays'.
    tail_p99_added_ms: tail.iop_added.p99,
    tail_p999_added_ms: tail.iop_added.p999,
    tail_relays_p99_added_ms: tail.relays_added.p99,
    tail_relays_p999_added_ms: tail.relays_added.p999,
    tail_p99_ratio_to_relays: tail.p99_ratio_to_relays,
    tail_p999_ratio_to_relays: tail.p999_ratio_to_relays,
    throughput_ratio: throughput.iop.requestsPerS / throughput.direct.requestsPerS,
    stream_tokens_per_s: streaming.iop.single.tokensPerS,
    stream_tokens_per_s_100: streaming.iop.concurrent.tokensPerS,
    ttft_added_ms: streaming.iop.ttft.p50 - streaming.direct.ttft.p50,
    // The many-node phase's keys carry its node count (`--nodes`, default 10,000): nodes_10000_rss_mb, ...
    [`nodes_${nodeCount}_rss_mb`]: nodes.edge_rss_max_mb,
    [`nodes_${nodeCount}_register_ms`]: nodes.register_total_ms,
    [`nodes_${nodeCount}_dispatch_p50_ms`]: nodes.requests_with_nodes.overhead.p50,
    [`nodes_${nodeCount}_dispatch_p99_ms`]: nodes.requests_with_nodes.overhead.p99,
    [`nodes_${nodeCount}_added_p50_ms`]: nodes.requests_with_nodes.added.p50,
    [`nodes_${nodeCount}_connected_after_${Math.round(nodes.hold_ms / 1000)}s`]: nodes.simulator_open,
    [`nodes_${nodeCount}_all_connected`]: nodes.all_connected,
    cpu_ms_per_request: {
      edge: throughput.iop.cpuMsPerRequest.edge,
      node: throughput.iop.cpuMsPerRequest.node,
    },
    history_events_per_s: history.eventsPerS,
    cluster_forward_added_p50_ms: cluster ? cluster.added_p50 : null,
    // Affinity phase: null where the "on" runs were skipped (affinity.on_skipped says why).
    affinity_ttft_p50_off_ms: affinity.ttft_p50_off_ms ?? null,
    affinity_ttft_p99_off_ms: affinity.ttft_p99_off_ms ?? null,
    affinity_ttft_p50_on_ms: affinity.ttft_p50_on_ms ?? null,
    affinity_ttft_p99_on_ms: affinity.ttft_p99_on_ms ?? null,
    affinity_ttft_p50_ratio: affinity.ttft_p50_ratio ?? null,
    affinity_hit_rate: affinity.hit_rate ?? null,
    // Agents phase (--agents): null when not run.
    agents_tight_completed: agents?.tight?.agent_runs_completed ?? null,
    agents_tight_wall_p50_ms: agents?.tight?.agent_wall_p50_ms ?? null,
    agents_tight_wall_p99_ms: agents?.tight?.agent_wall_p99_ms ?? null,
    agents_tight_call_added_p50_ms: agents?.tight?.call_added_p50_ms ?? null,
    agents_tight_call_added_p99_ms: agents?.tight?.call_added_p99_ms ?? null,
    agents_coplaced_wall_p50_ms: agents?.co_placement?.on?.agent_wall_p50_ms ?? null,
    agents_elsewhere_wall_p50_ms: agents?.co_placement?.off?.agent_wall_p50_ms ?? null,
    agents_elsewhere_over_coplaced_wall_p50: agents?.co_placement?.wall_p50_off_over_on ?? null,
    overhead_header_ms: overheadHeader,
    overhead_metric_mean_ms: overheadMetric.meanMs,
    fixed_rate: rates,
    tail,
    max_throughput: throughput,
    streaming,
    nodes,
    history,
    cluster,
    affinity,
    agents,
    rss_after_load_mb: { edge: edgeRssAfterLoadMb, node: nodeRssAfterLoadMb },
  };
  await mkdir(path.dirname(flags.out), { recursive: true });
  await writeFile(flags.out, `${JSON.stringify(result, null, 2)}\n`);
  printTable(result);
  process.stdout.write(`\nwritten ${path.relative(process.cwd(), flags.out)}\n`);
}

function printTable(r) {
  const f = (value, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const rows = [];
  for (const rate of Object.keys(r.fixed_rate)) {
    const { direct, iop } = r.fixed_rate[rate];
    for (const q of ['p50', 'p95', 'p99']) {
      rows.push([`${rate} req/s latency ${q} (ms)`, f(direct[q]), f(iop[q]), f(iop[q] - direct[q])]);
    }
    rows.push([
      `${rate} req/s errors / non-2xx`,
      `${direct.errors}/${direct.non2xx}`,
      `${iop.errors}/${iop.non2xx}`,
      '',
    ]);
  }
  const tail = r.tail;
  for (const [q, label] of [
    ['p99', 'p99'],
    ['p999', 'p99.9'],
  ]) {
    rows.push([
      `tail ${tail.rate} req/s latency ${label} (ms)`,
      f(tail.paths.direct[q]),
      f(tail.paths.iop[q]),
      `${f(tail.iop_added[q])} (2 relays add ${f(tail.relays_added[q])}: ${f(tail[`${q}_ratio_to_relays`])}×)`,
    ]);
  }
  const t = r.max_throughput;
  rows.push([
    'max throughput (req/s)',
    f(t.direct.requestsPerS, 0),
    f(t.iop.requestsPerS, 0),
    `ratio ${f(r.throughput_ratio)}`,
  ]);
  const cpu = (usage) =>
    Object.entries(usage)
      .map(([role, ms]) => `${role} ${f(ms, 2)}`)
      .join(', ');
  rows.push([
    'CPU ms per request (saturated; cpu_ms_per_request)',
    cpu(t.direct.cpuMsPerRequest),
    cpu(t.iop.cpuMsPerRequest),
    '',
  ]);
  const s = r.streaming;
  rows.push(['TTFT p50, 1 stream (ms)', f(s.direct.ttft.p50), f(s.iop.ttft.p50), f(r.ttft_added_ms)]);
  rows.push([
    `tokens/s, 1 stream (${s.iop.single.tokens} tokens)`,
    f(s.direct.single.tokensPerS, 0),
    f(s.iop.single.tokensPerS, 0),
    '',
  ]);
  rows.push([
    'tokens/s, 100 streams (total)',
    f(s.direct.concurrent.tokensPerS, 0),
    f(s.iop.concurrent.tokensPerS, 0),
    '',
  ]);
  rows.push([
    'TTFT p50 / p99, 100 streams (ms)',
    `${f(s.direct.concurrent.ttft.p50)} / ${f(s.direct.concurrent.ttft.p99)}`,
    `${f(s.iop.concurrent.ttft.p50)} / ${f(s.iop.concurrent.ttft.p99)}`,
    '',
  ]);
  const iopRates = Object.values(r.fixed_rate).map((rate) => rate.iop);
  const withHeader = iopRates.reduce((sum, rate) => sum + rate.withOverheadHeader, 0);
  const answered = iopRates.reduce((sum, rate) => sum + rate.completed, 0);
  const single = s.iop.single;
  rows.push([
    'x-iop-overhead-ms present (fixed-rate responses)',
    '',
    `${withHeader}/${answered}`,
    `1 stream: header ${single.overheadHeader ?? 'missing'}, trailer ${single.overheadTrailer ?? 'missing'}`,
  ]);
  rows.push([
    'x-iop-overhead-ms p50 / p99 (idle)',
    '',
    `${f(r.overhead_header_ms.p50, 3)} / ${f(r.overhead_header_ms.p99, 3)}`,
    '',
  ]);
  rows.push(['iop_overhead_seconds mean (ms, all load)', '', f(r.overhead_metric_mean_ms, 3), '']);
  const n = r.nodes;
  rows.push([
    `${n.count} nodes: edge RSS max (MB)`,
    '',
    `${f(n.edge_rss_max_mb, 1)} (idle ${f(n.edge_idle_rss_mb, 1)})`,
    'target < 1024',
  ]);
  rows.push([
    `${n.count} nodes: register all (ms) / p99 each`,
    '',
    `${f(n.register_total_ms, 0)} / ${f(n.register_p99_ms)}`,
    'target < 10000',
  ]);
  rows.push([
    `${n.count} nodes: connected after ${Math.round(n.hold_ms / 1000)} s`,
    '',
    `${n.simulator_open} open, ${n.simulator_closed} closed, gauge ${n.connected_gauge}`,
    `${n.all_connected ? 'all' : 'NOT all'}; ≥ ${n.node_pongs_min_per_node} pongs each`,
  ]);
  const without = n.requests_without_nodes.overhead;
  const held = n.requests_with_nodes.overhead;
  rows.push([
    `x-iop-overhead-ms p50 / p99, ${n.request_rate} req/s (0 → ${n.count} nodes)`,
    '',
    `${f(without.p50)} / ${f(without.p99)} → ${f(held.p50)} / ${f(held.p99)}`,
    'target p50 < 2',
  ]);
  rows.push([
    `IOP − direct p50 / p99, ${n.request_rate} req/s (0 → ${n.count} nodes)`,
    '',
    `${f(n.requests_without_nodes.added.p50)} / ${f(n.requests_without_nodes.added.p99)} → ` +
      `${f(n.requests_with_nodes.added.p50)} / ${f(n.requests_with_nodes.added.p99)}`,
    '',
  ]);
  rows.push([
    `${n.count} nodes: /metrics every 15 s (ms each)`,
    '',
    n.metrics_scrape_ms.map((ms) => f(ms, 0)).join(', ') || 'none (hold < 15 s)',
    '',
  ]);
  rows.push([
    `edge CPU ms/s at that rate (0 → ${n.count} nodes) / to register all`,
    '',
    `${f(n.edge_cpu_ms_per_s_baseline, 0)} → ${f(n.edge_cpu_ms_per_s_held, 0)} / ${f(n.edge_cpu_ms_register, 0)}`,
    '',
  ]);
  rows.push(['node history (events/s)', '', `${f(r.history.eventsPerS, 0)} (${r.history.backend})`, '']);
  rows.push(
    r.cluster
      ? [
          `cluster, 100 req/s p50: local / forwarded (ms, ${r.cluster.rounds} alternating rounds)`,
          '',
          `${f(r.cluster.local.p50)} / ${f(r.cluster.forwarded.p50)}`,
          f(r.cluster_forward_added_p50_ms),
        ]
      : ['cluster, forwarded run', '', 'skipped (no nats-server)', ''],
  );
  for (const [measure, value, note] of formatAffinityRows(r.affinity)) rows.push([measure, '', value, note]);
  if (r.agents)
    for (const [measure, value, note] of formatAgentFabricRows(r.agents))
      rows.push([measure, '', value, note]);
  const header = ['measure', 'direct', 'IOP', 'added'];
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => String(row[column]).length)),
  );
  const line = (row) => row.map((cell, column) => String(cell).padEnd(widths[column])).join('  ');
  process.stdout.write(
    `\nIOP benchmark ${r.date}  (${r.machine.cores} cores, Node ${r.machine.node}, backend latency ${r.backend_latency_ms} ms)\n`,
  );
  process.stdout.write(`${line(header)}\n${widths.map((width) => '-'.repeat(width)).join('  ')}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
}

/**
 * Two edges in cluster mode, the node on the first: the same fixed-rate load on each; the second forwards every
 * run over NATS to the first. Undefined when nats-server is missing.
 */
async function clusterPhase(backendUrl) {
  const nats = await startNats();
  if (!nats) {
    log('cluster phase skipped: nats-server is not installed');
    return undefined;
  }
  try {
    const pair = await startClusterPair({ backendUrl, natsUrl: nats.url });
    await waitServing(pair.localUrl);
    await waitServing(pair.forwardedUrl);
    const urls = {
      local: `${pair.localUrl}/v1/chat/completions`,
      forwarded: `${pair.forwardedUrl}/v1/chat/completions`,
    };
    for (const url of Object.values(urls))
      await fixedRate({ url, body: chatBody(), rate: 200, durationMs: 1000 });
    // Alternating rounds (local, forwarded, local, ...): the difference is taken within each round, so a drift of
    // the machine's load over the phase does not land on one path. Reported: the median of the rounds' differences
    // and each path's median p50.
    const rounds = quick ? 2 : 6;
    const perRound = { local: [], forwarded: [] };
    for (let round = 0; round < rounds; round += 1) {
      for (const [name, url] of Object.entries(urls)) {
        log(`cluster fixed rate 100 req/s, ${name}, round ${round + 1}/${rounds}`);
        perRound[name].push(await fixedRate({ url, body: chatBody(), rate: 100, durationMs: phaseMs / 2 }));
      }
    }
    const median = (values) => summarize(values).p50;
    const result = {
      rounds,
      local: { p50: median(perRound.local.map((r) => r.p50)), rounds: perRound.local },
      forwarded: { p50: median(perRound.forwarded.map((r) => r.p50)), rounds: perRound.forwarded },
      added_p50_per_round: perRound.forwarded.map((r, index) => r.p50 - perRound.local[index].p50),
    };
    result.added_p50 = median(result.added_p50_per_round);
    await pair.node.stop();
    for (const edge of pair.edges) await edge.stop();
    return result;
  } finally {
    await nats.stop();
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
  await removeTempDirs();
}
