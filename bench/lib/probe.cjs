// Preloaded into a benchmarked process (`node --require bench/lib/probe.cjs ...`, see bench/tail.mjs) to record,
// with wall-clock timestamps every process shares (performance.timeOrigin + performance.now(), epoch ms):
// - every garbage collection (PerformanceObserver 'gc': start, duration, kind: 1 scavenge, 2 mark-compact,
//   4 incremental marking step, 8 weak callbacks),
// - event-loop stalls: a 5 ms interval timer that fires more than 2 ms late marks a stall (time it fired, lag),
// and writes them as JSON to `$IOP_PROBE_DIR/<IOP_PROBE_NAME>-<pid>.json` on SIGUSR2 (recording restarts then),
// so the benchmark can ask for a window's records without stopping the process. Not part of any product build.
'use strict';
const { PerformanceObserver, performance } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');

const dir = process.env.IOP_PROBE_DIR;
const name = process.env.IOP_PROBE_NAME || path.basename(process.argv[1] || 'node');
const intervalMs = Number(process.env.IOP_PROBE_INTERVAL_MS || 5);
const origin = performance.timeOrigin;
let gcs = [];
let stalls = [];
let ticks = 0;

const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcs.push({
      at: origin + entry.startTime,
      ms: entry.duration,
      kind: entry.detail ? entry.detail.kind : entry.kind,
    });
  }
});
observer.observe({ entryTypes: ['gc'] });

let expected = performance.now() + intervalMs;
const timer = setInterval(() => {
  const now = performance.now();
  ticks += 1;
  const lag = now - expected;
  if (lag > 2) stalls.push({ at: origin + now, ms: lag });
  expected = now + intervalMs;
}, intervalMs);
timer.unref();

function newSpaceMb() {
  const space = v8.getHeapSpaceStatistics().find((entry) => entry.space_name === 'new_space');
  return space ? space.space_size / 1048576 : undefined;
}

/** Bytes in the old generation (old, code and large-object spaces) now, in MB: what scavenges promoted since. */
function oldGenerationUsedMb() {
  let used = 0;
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name !== 'new_space' && space.space_name !== 'new_large_object_space')
      used += space.space_used_size;
  }
  return used / 1048576;
}

if (dir) {
  process.on('SIGUSR2', () => {
    const file = path.join(dir, `${name}-${process.pid}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        name,
        pid: process.pid,
        intervalMs,
        ticks,
        gcs,
        stalls,
        newSpaceMb: newSpaceMb(),
        oldGenerationUsedMb: oldGenerationUsedMb(),
        // The same instant on the monotonic clock of --cpu-prof sample timestamps (µs) and as epoch ms.
        clock: { monotonicUs: Number(process.hrtime.bigint() / 1000n), epochMs: origin + performance.now() },
        heapUsedMb: process.memoryUsage().heapUsed / 1048576,
        rssMb: process.memoryUsage().rss / 1048576,
      }),
    );
    gcs = [];
    stalls = [];
    ticks = 0;
  });
}
