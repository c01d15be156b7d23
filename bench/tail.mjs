#!/usr/bin/env node
// Where the slow 1 % of a fixed-rate run go. Starts the IOP path (backend, edge, node from this tree's build) with
// bench/lib/probe.cjs preloaded in each process (GC events and event-loop stalls, wall-clock timestamps), sends an
// open-loop fixed-rate load (request timings kept per request), and lines the slowest requests up against what
// happened in each process while they were in flight: GC pauses (scavenge / mark-compact) and event-loop stalls
// in the edge, the node, the backend and the load generator itself, and how long each process waited for a CPU
// (/proc/<pid>/task/*/schedstat run-queue time over the window), and how much each process's old generation grew
// over the window per request when no major GC ran in it (what its scavenges promoted: objects kept alive across
// scavenges, the cause of the next major GC's pause). With --direct the same load also goes straight to
// the backend first (the generator's and backend's own tail).
// With --cpu-prof the edge and the node also run with --cpu-prof (200 µs sampling) and the report adds, per
// process, what it was executing during its event-loop stalls (self time by function, and how much of the stalls'
// wall time had samples at all: the rest the process was off the CPU, i.e. waiting for a core).
// Usage: node bench/tail.mjs [--rate 500] [--seconds 10] [--warmup 8] [--direct] [--top 12] [--json FILE]
//        [--cpu-prof] [--node-options="--max-semi-space-size=32"] [--tree OTHER_CHECKOUT]
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fixedRate, summarize } from './lib/load.mjs';
import { startProcess, stopAll } from './lib/processes.mjs';
import { MODEL, removeTempDirs, repoRoot } from './lib/topology.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '8' },
    direct: { type: 'boolean', default: false },
    top: { type: 'string', default: '12' },
    json: { type: 'string' },
    'node-options': { type: 'string', default: '' },
    'cpu-prof': { type: 'boolean', default: false },
    tree: { type: 'string' },
  },
});
const rate = Number(values.rate);
const durationMs = Number(values.seconds) * 1000;
const warmupMs = Number(values.warmup) * 1000;
for (const name of ['rate', 'seconds', 'warmup']) {
  if (!(Number(values[name]) >= 0)) {
    process.stderr.write(`--${name} must be a non-negative number, got ${values[name]}\n`);
    process.exit(2);
  }
}
const probe = path.join(repoRoot, 'bench/lib/probe.cjs');
// --tree DIR: start the edge and the node of another checkout's build (its bench/lib/topology.mjs), for an A/B
// with the same probe and report; the backend and the load generator stay this tree's.
const { startIopPath, waitServing } = await import(
  values.tree ? path.join(path.resolve(values.tree), 'bench/lib/topology.mjs') : './lib/topology.mjs'
);
// Extra node/V8 options for the edge and the node (e.g. "--max-semi-space-size=32"), to try flags.
const extraOptions = values['node-options'].split(' ').filter(Boolean);
const probeDir = await mkdtemp(path.join(os.tmpdir(), 'iop-tail-'));
process.env.IOP_PROBE_DIR = probeDir;
const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 16 });

/** Run-queue wait and on-CPU time (ms) of every thread of `pid`, summed: /proc/<pid>/task/<tid>/schedstat. */
function schedstat(pid) {
  let onCpu = 0;
  let waiting = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      onCpu += run / 1e6;
      waiting += wait / 1e6;
    } catch {
      // thread exited
    }
  }
  return { onCpu, waiting };
}

/** The load generator's own event-loop stalls (same detector as the probe). */
function selfStalls() {
  const origin = performance.timeOrigin;
  const stalls = [];
  let expected = performance.now() + 5;
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - expected > 2) stalls.push({ at: origin + now, ms: now - expected });
    expected = now + 5;
  }, 5);
  return () => {
    clearInterval(timer);
    return { name: 'loadgen', gcs: [], stalls };
  };
}

async function collect(processes) {
  for (const handle of processes) process.kill(handle.pid, 'SIGUSR2');
  const files = new Map();
  for (let attempt = 0; attempt < 100 && files.size < processes.length; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const handle of processes) {
      const file = readdirSync(probeDir).find((name) => name.endsWith(`-${handle.pid}.json`));
      if (file && !files.has(handle.name)) {
        try {
          files.set(handle.name, JSON.parse(readFileSync(path.join(probeDir, file), 'utf8')));
          await rm(path.join(probeDir, file));
        } catch {
          // half written: next attempt
        }
      }
    }
  }
  return files;
}

async function measure(url, processes) {
  await fixedRate({ url, body, rate, durationMs: warmupMs }); // warm-up
  const warm = await collect(processes); // drops the warm-up's records (keeps each one's old generation size)
  const before = new Map(processes.map((handle) => [handle.name, schedstat(handle.pid)]));
  const stopSelf = selfStalls();
  const selfBefore = schedstat(process.pid);
  const records = [];
  const load = await fixedRate({ url, body, rate, durationMs, records });
  const self = stopSelf();
  const selfAfter = schedstat(process.pid);
  const probes = await collect(processes);
  probes.set('loadgen', self);
  for (const [name, data] of probes) data.oldGenerationBeforeMb = warm.get(name)?.oldGenerationUsedMb;
  const cpu = { loadgen: diff(selfBefore, selfAfter) };
  for (const handle of processes) cpu[handle.name] = diff(before.get(handle.name), schedstat(handle.pid));
  return { load, records, probes, cpu };
}

const diff = (a, b) => ({ onCpu: b.onCpu - a.onCpu, waiting: b.waiting - a.waiting });

/** ms of `events` (each ending at or starting at `at`, lasting `ms`) inside [from, to]. */
function overlap(events, from, to, startsAt) {
  let total = 0;
  let largest = 0;
  for (const event of events) {
    const start = startsAt ? event.at : event.at - event.ms;
    const end = start + event.ms;
    const inside = Math.min(end, to) - Math.max(start, from);
    if (inside > 0) {
      total += inside;
      largest = Math.max(largest, event.ms);
    }
  }
  return { total, largest };
}

const KIND = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-cb' };

function report(label, result) {
  const { records, probes, cpu, load } = result;
  const latency = (record) => record.end - record.due;
  const sorted = [...records].sort((a, b) => latency(a) - latency(b));
  const stats = summarize(records.map(latency));
  const p99 = stats.p99;
  const slow = sorted.filter((record) => latency(record) >= p99);
  const fast = sorted.slice(0, Math.floor(sorted.length * 0.5));
  const lines = [];
  const f = (value) => (Number.isFinite(value) ? value.toFixed(2) : '-');
  lines.push(
    `${label}: ${records.length} requests at ${rate} req/s, p50 ${f(stats.p50)} p99 ${f(p99)} max ${f(stats.max)} ms, ` +
      `generator late max ${f(load.generatorLateMaxMs)} ms, load average ${os.loadavg()[0].toFixed(2)}`,
  );
  lines.push(
    'per process over the window: CPU ms, run-queue wait ms; GC count / total ms / max ms by kind; stalls > 2 ms',
  );
  for (const [name, data] of probes) {
    const byKind = {};
    for (const gc of data.gcs) {
      const kind = KIND[gc.kind] ?? String(gc.kind);
      byKind[kind] ??= { n: 0, ms: 0, max: 0 };
      byKind[kind].n += 1;
      byKind[kind].ms += gc.ms;
      byKind[kind].max = Math.max(byKind[kind].max, gc.ms);
    }
    const gcText = Object.entries(byKind)
      .map(([kind, value]) => `${kind} ${value.n}/${f(value.ms)}/${f(value.max)}`)
      .join(', ');
    const stallMs = data.stalls.map((stall) => stall.ms);
    const stallStats = summarize(stallMs);
    // Old generation growth over the window = what scavenges promoted, when no major GC ran in between.
    const majorGc = data.gcs.some((gc) => gc.kind === 2 || gc.kind === 4);
    const promoted =
      data.oldGenerationBeforeMb === undefined || data.oldGenerationUsedMb === undefined
        ? ''
        : majorGc
          ? ', old gen: a major GC ran'
          : `, old gen +${f(data.oldGenerationUsedMb - data.oldGenerationBeforeMb)} MB (${f(
              ((data.oldGenerationUsedMb - data.oldGenerationBeforeMb) * 1024) / Math.max(1, records.length),
            )} KB/req)`;
    const memory =
      data.newSpaceMb === undefined
        ? ''
        : ` | new space ${f(data.newSpaceMb)} MB, rss ${f(data.rssMb)} MB${promoted}`;
    lines.push(
      `  ${name.padEnd(8)} cpu ${f(cpu[name]?.onCpu)} wait ${f(cpu[name]?.waiting)} | gc ${gcText || 'none'} | stalls ${
        stallMs.length
      } (sum ${f(stallMs.reduce((a, b) => a + b, 0))}, p50 ${f(stallStats.p50)}, max ${f(stallStats.max)})${memory}`,
    );
  }
  // Per request: how much of its time each process spent in GC or stalled.
  const causes = (record) => {
    const out = {};
    for (const [name, data] of probes) {
      const gcMajor = overlap(
        data.gcs.filter((gc) => gc.kind === 2),
        record.due,
        record.end,
        true,
      );
      const gcMinor = overlap(
        data.gcs.filter((gc) => gc.kind !== 2),
        record.due,
        record.end,
        true,
      );
      const stall = overlap(data.stalls, record.due, record.end, false);
      out[name] = { gcMajor: gcMajor.total, gcMinor: gcMinor.total, stall: stall.total };
    }
    return out;
  };
  const mean = (list, pick) => list.reduce((sum, item) => sum + pick(item), 0) / Math.max(1, list.length);
  const share = (list, pick) => (100 * list.filter(pick).length) / Math.max(1, list.length);
  const groups = { 'slowest 1%': slow, 'fastest 50%': fast };
  lines.push(
    'requests: mean ms (generator queue = sent − due; overhead = x-iop-overhead-ms) and % overlapping',
  );
  for (const [groupName, group] of Object.entries(groups)) {
    const withCauses = group.map((record) => ({ record, causes: causes(record) }));
    const parts = [
      `latency ${f(mean(group, latency))}`,
      `queue ${f(mean(group, (r) => r.sent - r.due))}`,
      `to-headers ${f(mean(group, (r) => r.headers - r.sent))}`,
      `overhead ${f(mean(group, (r) => r.overhead ?? Number.NaN))}`,
    ];
    for (const name of probes.keys()) {
      parts.push(
        `${name}: gc-mc ${f(share(withCauses, (c) => c.causes[name].gcMajor > 0))}% ` +
          `scav ${f(share(withCauses, (c) => c.causes[name].gcMinor > 0))}% (${f(
            mean(withCauses, (c) => c.causes[name].gcMinor),
          )} ms) stall ${f(share(withCauses, (c) => c.causes[name].stall > 0))}% (${f(
            mean(withCauses, (c) => c.causes[name].stall),
          )} ms)`,
      );
    }
    lines.push(`  ${groupName.padEnd(12)} ${parts.join(' | ')}`);
  }
  // One cause per slow request, the first that applies: the whole machine (the backend or the load generator,
  // which do almost nothing, stalled >= 5 ms meanwhile: CPU taken by something else), else the IOP process whose
  // stalls overlapped it most (scavenge / mark-compact when a GC was most of that), else none seen.
  const verdicts = new Map();
  for (const record of slow) {
    const c = causes(record);
    const outside = ['backend', 'loadgen'].some(
      (name) => (c[name]?.stall ?? 0) + (c[name]?.gcMinor ?? 0) >= 5,
    );
    let verdict = 'none seen (> 2 ms)';
    if (outside) verdict = 'machine-wide stall';
    else {
      const worst = ['edge', 'node']
        .filter((name) => c[name])
        .map((name) => [name, c[name]])
        .sort((a, b) => b[1].stall - a[1].stall)[0];
      if (worst && worst[1].stall > 0) {
        const gc = worst[1].gcMajor + worst[1].gcMinor;
        const kind = worst[1].gcMajor > 0 ? 'mark-compact' : 'scavenge';
        verdict = `${worst[0]} ${gc >= worst[1].stall / 2 ? kind : 'stall (not GC)'}`;
      }
    }
    verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1);
  }
  lines.push(
    `slowest 1% by cause: ${[...verdicts]
      .sort((a, b) => b[1] - a[1])
      .map(([verdict, n]) => `${verdict} ${n}`)
      .join(', ')}`,
  );
  // The slowest requests one by one.
  const top = Number(values.top);
  lines.push(
    `slowest ${top}: t (ms into run), latency, queue, overhead; then per process gc/stall ms overlapping`,
  );
  const t0 = records.length ? Math.min(...records.map((r) => r.due)) : 0;
  for (const record of sorted.slice(-top).reverse()) {
    const c = causes(record);
    const perProcess = [...probes.keys()]
      .map((name) => {
        const value = c[name];
        const gc = value.gcMajor + value.gcMinor;
        return gc > 0 || value.stall > 0
          ? `${name} gc ${f(gc)}${value.gcMajor ? ' (mc)' : ''} stall ${f(value.stall)}`
          : '';
      })
      .filter(Boolean)
      .join('; ');
    lines.push(
      `  t=${f(record.due - t0).padStart(8)} ${f(latency(record)).padStart(6)} q ${f(record.sent - record.due)} ov ${f(
        record.overhead,
      )}  ${perProcess}`,
    );
  }
  // Slow requests in time: clustered (one stall hits a burst) or spread?
  const buckets = new Map();
  for (const record of slow) {
    const second = Math.floor((record.due - t0) / 100) / 10;
    buckets.set(second, (buckets.get(second) ?? 0) + 1);
  }
  lines.push(
    `slow requests per 100 ms window (t s: n): ${[...buckets]
      .sort((a, b) => a[0] - b[0])
      .map(([second, n]) => `${second.toFixed(1)}:${n}`)
      .join(' ')}`,
  );
  return lines.join('\n');
}

/**
 * What a process executed during its stalls, from its .cpuprofile: samples whose time falls in a stall window
 * ([at − ms, at]), self time by function and by a short stack of the process's own frames.
 */
function stallProfile(profileFile, data) {
  const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const toEpoch = (us) => data.clock.epochMs + (us - data.clock.monotonicUs) / 1000;
  const windows = data.stalls.map((stall) => [stall.at - stall.ms, stall.at]).sort((a, b) => a[0] - b[0]);
  const label = (node) => {
    const frame = node.callFrame;
    const file = frame.url ? frame.url.split('/').slice(-2).join('/') : '';
    return `${frame.functionName || '(anonymous)'}${file ? ` ${file}:${frame.lineNumber + 1}` : ''}`;
  };
  const ownStack = (id) => {
    const frames = [];
    for (let at = id; at !== undefined && frames.length < 4; at = parent.get(at)) {
      const node = byId.get(at);
      if (node.callFrame.url.includes('/dist/') || node.callFrame.url.includes('node:internal') === false) {
        if (node.callFrame.url.includes('/dist/')) frames.push(label(node));
      }
    }
    return frames.join(' < ') || label(byId.get(id));
  };
  const self = new Map();
  const stacks = new Map();
  let sampledMs = 0;
  let offCpuMs = 0;
  let time = profile.startTime;
  let cursor = 0;
  for (let index = 0; index < profile.samples.length; index += 1) {
    time += profile.timeDeltas[index] ?? 0;
    const at = toEpoch(time);
    while (cursor < windows.length && windows[cursor][1] < at) cursor += 1;
    if (cursor >= windows.length) break;
    if (at < windows[cursor][0]) continue;
    const node = byId.get(profile.samples[index]);
    if (node.callFrame.functionName === '(idle)') continue;
    // A sample's gap to the next one is its time, up to twice the interval: a longer gap is time the process
    // spent off the CPU (descheduled), not in this function.
    const gap = (profile.timeDeltas[index + 1] ?? 0) / 1000;
    const ms = Math.min(gap, 0.4);
    offCpuMs += gap - ms;
    sampledMs += ms;
    self.set(label(node), (self.get(label(node)) ?? 0) + ms);
    const stack = ownStack(node.id);
    stacks.set(stack, (stacks.get(stack) ?? 0) + ms);
  }
  const stallMs = data.stalls.reduce((sum, stall) => sum + stall.ms, 0);
  const top = (map, n) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([key, ms]) => `    ${ms.toFixed(1).padStart(7)} ms  ${key}`);
  return [
    `  ${data.name}: stalls ${stallMs.toFixed(1)} ms in all, ${sampledMs.toFixed(1)} ms of it on the CPU (samples), ${offCpuMs.toFixed(
      1,
    )} ms gaps between samples (off the CPU)`,
    '   self time in stalls by function:',
    ...top(self, 12),
    '   by own (dist) stack:',
    ...top(stacks, 10),
  ].join('\n');
}

try {
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    nodeOptions: ['--require', probe],
    args: ['--latency-ms', '10'],
    ready: /BACKEND_URL=(\S+)/,
  });
  const output = {};
  if (values.direct) {
    const direct = await measure(`${backend.match[1]}/v1/chat/completions`, [backend]);
    process.stdout.write(`${report('direct', direct)}\n`);
    output.direct = direct;
  }
  const profileDir = values['cpu-prof'] ? await mkdtemp(path.join(os.tmpdir(), 'iop-tail-prof-')) : undefined;
  const profileOptions = profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=200']
    : [];
  const iop = await startIopPath({
    backendUrl: backend.match[1],
    nodeOptions: [...extraOptions, ...profileOptions, '--require', probe],
  });
  await waitServing(iop.openaiUrl);
  const result = await measure(`${iop.openaiUrl}/v1/chat/completions`, [backend, iop.edge, iop.node]);
  process.stdout.write(`${report('IOP', result)}\n`);
  output.iop = result;
  if (profileDir) {
    await iop.node.stop();
    await iop.edge.stop();
    const lines = ['what each process ran during its stalls (--cpu-prof):'];
    for (const handle of [iop.edge, iop.node]) {
      const file = readdirSync(profileDir).find((name) => name.includes(`.${handle.pid}.`));
      if (file && existsSync(path.join(profileDir, file)))
        lines.push(stallProfile(path.join(profileDir, file), result.probes.get(handle.name)));
      else lines.push(`  ${handle.name}: no profile written`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    await rm(profileDir, { recursive: true, force: true });
  }
  if (values.json) {
    const plain = (value) => ({ ...value, probes: Object.fromEntries(value.probes) });
    writeFileSync(
      values.json,
      JSON.stringify(Object.fromEntries(Object.entries(output).map(([k, v]) => [k, plain(v)]))),
    );
  }
} finally {
  await stopAll();
  await removeTempDirs();
  await rm(probeDir, { recursive: true, force: true });
}
