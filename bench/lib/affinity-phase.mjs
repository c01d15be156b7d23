// The affinity phase of `pnpm bench` (issue 32): does placing a conversation's turns on the provider that served
// its previous turn pay off when backends have a prefix cache? Topology: four prefix-cache fake backends
// (bench/prefix-cache-backend.mjs, one process) as four providers of one model on the bench node, an edge, and the
// multi-turn agent workload (./agent-workload.mjs) in this process. Four runs, each on fresh processes (empty
// caches, fresh counters) with the same prompts:
//   off      models[].affinity.enabled: false, requests with x-session-id;
//   on       affinity enabled, requests with x-session-id (the explicit key);
//   on_hash  affinity enabled, no x-session-id (the edge keys on a hash of the conversation's head);
//   pinned   no edge: conversation i straight to backend i mod 4 (the best placement can do, a reference).
// Reported per run: TTFT p50/p99 (all turns, first turns, follow-ups), the affinity hit rate from the edge's
// `iop_affinity_total{result}` when it exports it, the backends' own counts (follow-ups whose previous turn was
// in the serving backend's cache, prompt tokens computed vs cached, the most requests a backend held at once)
// and how often a follow-up stayed on its previous turn's provider (x-iop-provider). An edge whose config
// validation rejects `models[].affinity` (a build without affinity) runs "off" without the field (its placement
// is affinity-blind anyway) and skips the "on" runs, saying why.
import path from 'node:path';
import { runAgentWorkload } from './agent-workload.mjs';
import { startProcess } from './processes.mjs';
import {
  MODEL,
  benchNodeEntry,
  checkEdgeConfig,
  repoRoot,
  startBenchNodeOn,
  startEdgeFromConfig,
  waitServing,
  writeEdgeConfig,
} from './topology.mjs';

const PROVIDERS = 4;

/** The workload and backend model of a full and of a `--quick` run. */
export function affinityShape(quick) {
  return {
    seed: 'iop-affinity-bench',
    conversations: quick ? 8 : 16,
    turns: 16,
    concurrency: quick ? 8 : 16,
    thinkMs: [20, 180],
    startSpreadMs: 2000,
    systemTokens: 1000,
    taskTokens: 1500,
    turnTokens: 150,
    backend: {
      baseMs: 5,
      msPerUnseenToken: 0.2,
      capacityTokens: 200_000,
      answerTokens: 24,
      tokenIntervalMs: 1,
    },
    providerCapacity: 8,
  };
}

function modelsConfig(affinity) {
  const providers = Object.fromEntries(Array.from({ length: PROVIDERS }, (_, index) => [`p${index}`, MODEL]));
  return [{ id: MODEL, providers, ...(affinity === undefined ? {} : { affinity }) }];
}

function nodesConfig(backendUrls, capacity) {
  return [
    benchNodeEntry({
      maxConcurrency: 64,
      instances: backendUrls.map((url, index) => ({
        name: `prefix-${index}`,
        type: 'openai_compat',
        provider: 'vllm',
        base_url: `${url}/v1`,
        request_timeout_ms: 60_000,
      })),
      providers: backendUrls.map((_, index) => ({
        id: `p${index}`,
        type: 'vllm',
        category: 'api',
        adapter: `prefix-${index}`,
        models: [MODEL],
        capacity,
        max_queue: 1000,
        queue_timeout_ms: 60_000,
      })),
    }),
  ];
}

/** Sums of `iop_affinity_total` by `result` label in a /metrics page; undefined when the edge has no such metric. */
export function affinityCounts(metricsText) {
  let found = false;
  const counts = {};
  for (const match of metricsText.matchAll(/^iop_affinity_total\{([^}]*)\} (\S+)$/gm)) {
    const result = /(?:^|,)result="([^"]*)"/.exec(match[1])?.[1];
    if (result === undefined) continue;
    found = true;
    counts[result] = (counts[result] ?? 0) + Number(match[2]);
  }
  return found ? counts : undefined;
}

/** hit / (hit + miss + spill) of the counts' difference between two scrapes; undefined without counts. */
export function affinityHitRate(before, after) {
  if (!after) return undefined;
  const delta = {};
  for (const result of new Set([...Object.keys(before ?? {}), ...Object.keys(after)]))
    delta[result] = (after[result] ?? 0) - (before?.[result] ?? 0);
  const total = Object.values(delta).reduce((sum, value) => sum + value, 0);
  return { counts: delta, rate: total > 0 ? (delta.hit ?? 0) / total : Number.NaN };
}

async function backendStats(urls) {
  return Promise.all(urls.map(async (url) => (await fetch(`${url}/stats`)).json()));
}

/** Differences of the backends' counters between two /stats reads (max_in_flight: the later value). */
function statsDelta(before, after) {
  return after.map((stats, index) => {
    const delta = { ...stats };
    for (const key of [
      'requests',
      'rejected',
      'prompt_tokens',
      'cached_tokens',
      'unseen_tokens',
      'first_turns',
      'follow_ups',
      'follow_up_hits',
    ])
      delta[key] = stats[key] - before[index][key];
    return delta;
  });
}

/** What the backends counted over a run, summed. */
function backendFigures(backends, shape) {
  const sum = (key) => backends.reduce((total, stats) => total + stats[key], 0);
  return {
    backends,
    backend_follow_up_hit_rate: sum('follow_up_hits') / Math.max(1, sum('follow_ups')),
    backend_cached_token_share: sum('cached_tokens') / Math.max(1, sum('prompt_tokens')),
    backend_unseen_tokens: sum('unseen_tokens'),
    backend_max_in_flight: Math.max(...backends.map((stats) => stats.max_in_flight)),
    provider_capacity: shape.providerCapacity,
  };
}

async function scrapeAffinity(metricsAddress) {
  const base = metricsAddress.startsWith('http') ? metricsAddress : `http://${metricsAddress}`;
  return affinityCounts(await (await fetch(`${base}/metrics`)).text());
}

/**
 * One run on fresh processes. `affinity`: the `models[].affinity` value to configure (undefined: leave the field
 * out). Resolves `{ skipped }` when the edge's config check rejects the field, else the run's figures.
 */
async function oneRun({ name, affinity, sessionHeader, pinned = false, checkConfig = true, shape, log }) {
  const b = shape.backend;
  const backends = await startProcess({
    name: `prefix-backends-${name}`,
    script: path.join(repoRoot, 'bench/prefix-cache-backend.mjs'),
    args: [
      ['--count', PROVIDERS],
      ['--base-ms', b.baseMs],
      ['--ms-per-token', b.msPerUnseenToken],
      ['--capacity-tokens', b.capacityTokens],
      ['--answer-tokens', b.answerTokens],
      ['--token-interval-ms', b.tokenIntervalMs],
    ].flatMap(([flag, value]) => [flag, String(value)]),
    ready: /PREFIX_BACKENDS=(\S+)/,
  });
  const processes = [backends];
  try {
    const urls = backends.match[1].split(',');
    if (pinned) {
      // No edge: conversation i straight to backend i mod 4, the placement perfect affinity would make.
      log(`affinity ${name}: the same workload pinned to the backends directly (reference)`);
      const statsBefore = await backendStats(urls);
      const workload = await runAgentWorkload({
        urlFor: (index) => urls[index % urls.length],
        providerOf: (index) => `p${index % urls.length}`,
        model: MODEL,
        shape,
        sessionHeader: false,
      });
      return { ...workload, ...backendFigures(statsDelta(statsBefore, await backendStats(urls)), shape) };
    }
    const config = await writeEdgeConfig({
      prefix: `iop-bench-affinity-${name}-`,
      nodes: nodesConfig(urls, shape.providerCapacity),
      models: modelsConfig(affinity),
    });
    // The off run checks the config first (the on runs use the same field; their serve would fail alike).
    const check = checkConfig ? checkEdgeConfig(config.configPath) : { ok: true };
    if (!check.ok) {
      if (affinity !== undefined && /affinity/.test(check.output)) return { skipped: check.output };
      throw new Error(`affinity phase: the edge rejects the bench's config:\n${check.output}`);
    }
    const edge = await startEdgeFromConfig(`edge-affinity-${name}`, config);
    processes.push(edge);
    const node = await startBenchNodeOn(edge);
    processes.push(node);
    const openaiUrl = edge.addresses.openai;
    await waitServing(openaiUrl);
    const statsBefore = await backendStats(urls);
    const affinityBefore = await scrapeAffinity(edge.addresses.metrics);
    log(
      `affinity ${name}: ${shape.conversations} conversations × ${shape.turns} turns, ` +
        `${shape.concurrency} at once, ${sessionHeader ? 'with' : 'without'} x-session-id`,
    );
    const workload = await runAgentWorkload({
      url: openaiUrl,
      model: MODEL,
      shape,
      sessionHeader,
      sessionPrefix: `conv-${name}`,
    });
    const affinityAfter = await scrapeAffinity(edge.addresses.metrics);
    const backendsAfter = statsDelta(statsBefore, await backendStats(urls));
    return {
      affinity_configured: affinity ?? null,
      session_header: sessionHeader,
      ...workload,
      affinity_metric: affinityHitRate(affinityBefore, affinityAfter) ?? null,
      ...backendFigures(backendsAfter, shape),
    };
  } finally {
    for (const handle of processes.reverse()) await handle.stop();
  }
}

/**
 * The whole phase: the off run, then the two on runs (unless the edge rejects `models[].affinity`), then the
 * pinned reference; `shape` defaults to affinityShape(quick). Resolves the
 * per-run details and the summary figures (`ttft_p50_off_ms`, `ttft_p50_on_ms`, `hit_rate`, ...; null where a run
 * was skipped).
 */
export async function affinityPhase({ quick, log, shape = affinityShape(quick) }) {
  let off = await oneRun({ name: 'off', affinity: { enabled: false }, sessionHeader: true, shape, log });
  let supported = true;
  if (off.skipped) {
    supported = false;
    log(
      'affinity: this edge rejects models[].affinity (a build without conversation affinity); the "off" run goes ' +
        'without the field and the "on" runs are skipped. Config check said:\n' +
        off.skipped,
    );
    off = await oneRun({ name: 'off', affinity: undefined, sessionHeader: true, shape, log });
  }
  const on = supported
    ? await oneRun({
        name: 'on',
        affinity: { enabled: true },
        sessionHeader: true,
        checkConfig: false,
        shape,
        log,
      })
    : undefined;
  const onHash = supported
    ? await oneRun({
        name: 'on_hash',
        affinity: { enabled: true },
        sessionHeader: false,
        checkConfig: false,
        shape,
        log,
      })
    : undefined;
  const pinned = await oneRun({ name: 'pinned', pinned: true, shape, log });
  const skipReason = supported
    ? null
    : 'the edge rejects models[].affinity in its config (no conversation affinity in this build)';
  const hitRate = (run) => {
    if (!run || run.skipped) return null;
    const rate = run.affinity_metric?.rate;
    return Number.isFinite(rate) ? rate : run.backend_follow_up_hit_rate;
  };
  const hitSource = (run) =>
    !run || run.skipped
      ? null
      : Number.isFinite(run.affinity_metric?.rate)
        ? 'iop_affinity_total'
        : 'backends';
  const p = (run, key, q) => (run && !run.skipped ? run[key][q] : null);
  return {
    shape,
    on_skipped: skipReason,
    runs: { off, on: on ?? null, on_hash: onHash ?? null, pinned },
    ttft_p50_off_ms: p(off, 'ttft', 'p50'),
    ttft_p99_off_ms: p(off, 'ttft', 'p99'),
    ttft_p50_on_ms: p(on, 'ttft', 'p50'),
    ttft_p99_on_ms: p(on, 'ttft', 'p99'),
    ttft_p50_on_hash_ms: p(onHash, 'ttft', 'p50'),
    ttft_p99_on_hash_ms: p(onHash, 'ttft', 'p99'),
    ttft_p50_pinned_ms: pinned.ttft.p50,
    ttft_p99_pinned_ms: pinned.ttft.p99,
    ttft_p50_ratio: on && !on.skipped ? on.ttft.p50 / off.ttft.p50 : null,
    ttft_p50_ratio_pinned: pinned.ttft.p50 / off.ttft.p50,
    hit_rate: hitRate(on),
    hit_rate_source: hitSource(on),
    hit_rate_on_hash: hitRate(onHash),
    hit_rate_off_backends: off.backend_follow_up_hit_rate,
  };
}

/** The phase's lines for a table: `[measure, value, target or note]`. */
export function formatAffinityRows(r) {
  if (r.error) return [['affinity phase', `failed: ${r.error.split('\n')[0]}`, '']];
  const f = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const pct = (value) => (Number.isFinite(value) ? `${(value * 100).toFixed(1)} %` : 'n/a');
  const s = r.shape;
  const label = `affinity (${s.conversations} conv × ${s.turns} turns, 4 providers)`;
  const run = (key) => r.runs[key];
  const ttft = (value) =>
    value
      ? `${f(value.ttft.p50)} / ${f(value.ttft.p99)} (follow-ups ${f(value.ttft_follow_ups.p50)})`
      : 'skipped';
  const errors = (value) => (value ? `, ${value.errors} errors` : '');
  const rows = [
    [`${label}: TTFT p50 / p99 off (ms)`, `${ttft(run('off'))}${errors(run('off'))}`, ''],
    [
      `${label}: TTFT p50 / p99 on, x-session-id (ms)`,
      `${ttft(run('on'))}${errors(run('on'))}`,
      r.ttft_p50_ratio === null
        ? (r.on_skipped ?? '')
        : `p50 on/off ${f(r.ttft_p50_ratio, 2)} (target ≤ 0.5)`,
    ],
    [`${label}: TTFT p50 / p99 on, head hash (ms)`, `${ttft(run('on_hash'))}${errors(run('on_hash'))}`, ''],
    [
      `${label}: TTFT p50 / p99 pinned to backends, no edge (ms)`,
      ttft(run('pinned')),
      `reference: p50 pinned/off ${f(r.ttft_p50_ratio_pinned, 2)}`,
    ],
    [
      `${label}: hit rate on / head hash`,
      `${pct(r.hit_rate)} / ${pct(r.hit_rate_on_hash)}`,
      r.hit_rate_source ? `from ${r.hit_rate_source} (target ≥ 90 %)` : '',
    ],
    [
      `${label}: backends' follow-up cache hits off / on / head hash / pinned`,
      ['off', 'on', 'on_hash', 'pinned'].map((key) => pct(run(key)?.backend_follow_up_hit_rate)).join(' / '),
      `most in flight at one backend: ${['off', 'on', 'on_hash', 'pinned']
        .map((key) => run(key)?.backend_max_in_flight ?? 'n/a')
        .join(' / ')} (capacity ${s.providerCapacity})`,
    ],
  ];
  return rows;
}
