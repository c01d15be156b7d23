// The dashboard's charts over the last hour: a fixed ring of `buckets` time buckets of `bucketMs` each (default
// 360 × 10 s), no external database. Each finished run adds to its end bucket (count, duration and overhead
// samples); `sample()` records queue depth and in-flight (the maximum seen in the bucket). Percentiles come from
// at most `maxSamplesPerBucket` samples per bucket (reservoir-free: later samples beyond the cap are dropped, the
// count still grows), so memory is bounded whatever the load.
import { systemClock, type Clock } from '../clock.js';
import type { UiChartPoint, UiCharts } from '@iop/ui-api';

export interface ChartSeriesOptions {
  bucketMs?: number;
  buckets?: number;
  maxSamplesPerBucket?: number;
  clock?: Clock;
}

export interface ChartSeries {
  /** A run that ended at `endedMs` after `durationMs` (overhead when known). */
  addRun(endedMs: number, durationMs: number, overheadMs: number | null): void;
  /** Current queue depth and in-flight runs. */
  sample(queued: number, inFlight: number): void;
  /** Every bucket of the window, oldest first (empty buckets included, so the time axis is even). */
  snapshot(): UiCharts;
}

interface Bucket {
  start: number;
  count: number;
  durations: number[];
  overheads: number[];
  queued: number;
  inFlight: number;
}

export function createChartSeries(options: ChartSeriesOptions = {}): ChartSeries {
  const bucketMs = options.bucketMs ?? 10_000;
  const size = options.buckets ?? 360;
  const maxSamples = options.maxSamplesPerBucket ?? 512;
  const clock = options.clock ?? systemClock;
  if (!Number.isInteger(bucketMs) || bucketMs < 1) throw new RangeError('bucketMs must be an integer ≥ 1');
  if (!Number.isInteger(size) || size < 1) throw new RangeError('buckets must be an integer ≥ 1');
  const ring: (Bucket | undefined)[] = new Array<Bucket | undefined>(size).fill(undefined);

  function bucketAt(atMs: number): Bucket | undefined {
    const start = Math.floor(atMs / bucketMs) * bucketMs;
    const newest = Math.floor(clock.now() / bucketMs) * bucketMs;
    if (start <= newest - size * bucketMs || start > newest) return undefined;
    const index = Math.floor(start / bucketMs) % size;
    let bucket = ring[index];
    if (!bucket || bucket.start !== start) {
      bucket = { start, count: 0, durations: [], overheads: [], queued: 0, inFlight: 0 };
      ring[index] = bucket;
    }
    return bucket;
  }

  return {
    addRun(endedMs, durationMs, overheadMs) {
      const bucket = bucketAt(endedMs);
      if (!bucket) return;
      bucket.count += 1;
      if (bucket.durations.length < maxSamples) bucket.durations.push(durationMs);
      if (overheadMs !== null && bucket.overheads.length < maxSamples) bucket.overheads.push(overheadMs);
    },
    sample(queued, inFlight) {
      const bucket = bucketAt(clock.now());
      if (!bucket) return;
      bucket.queued = Math.max(bucket.queued, queued);
      bucket.inFlight = Math.max(bucket.inFlight, inFlight);
    },
    snapshot() {
      const newest = Math.floor(clock.now() / bucketMs) * bucketMs;
      const points: UiChartPoint[] = [];
      for (let offset = size - 1; offset >= 0; offset -= 1) {
        const start = newest - offset * bucketMs;
        const bucket = ring[Math.floor(start / bucketMs) % size];
        const live = bucket && bucket.start === start ? bucket : undefined;
        points.push({
          t_ms: start,
          requests_per_s: live ? round(live.count / (bucketMs / 1000)) : 0,
          p50_ms: live ? percentile(live.durations, 0.5) : null,
          p99_ms: live ? percentile(live.durations, 0.99) : null,
          overhead_p50_ms: live ? percentile(live.overheads, 0.5) : null,
          overhead_p99_ms: live ? percentile(live.overheads, 0.99) : null,
          queued: live?.queued ?? 0,
          in_flight: live?.inFlight ?? 0,
        });
      }
      return { bucket_ms: bucketMs, points };
    },
  };
}

/** Nearest-rank percentile; null for no samples. */
export function percentile(samples: readonly number[], quantile: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((left, right) => left - right);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(quantile * sorted.length)));
  return sorted[rank - 1] ?? null;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
