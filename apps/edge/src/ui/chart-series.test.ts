import { systemClock } from '../clock.js';
import { describe, expect, it } from '@jest/globals';
import { createChartSeries, percentile } from './chart-series.js';

describe('chart series', () => {
  it('puts finished runs and samples into their time buckets and computes percentiles', () => {
    let now = 105_000;
    const series = createChartSeries({
      bucketMs: 10_000,
      buckets: 6,
      clock: { ...systemClock, now: () => now },
    });
    for (let index = 1; index <= 100; index += 1) series.addRun(now - 1, index, index / 10);
    series.sample(3, 5);
    series.sample(1, 7);
    now += 10_000;
    series.addRun(now, 1000, null);
    const { bucket_ms, points } = series.snapshot();
    expect(bucket_ms).toBe(10_000);
    expect(points).toHaveLength(6);
    const [previous, latest] = points.slice(-2);
    expect(previous).toMatchObject({
      t_ms: 100_000,
      requests_per_s: 10,
      p50_ms: 50,
      p99_ms: 99,
      queued: 3,
      in_flight: 7,
    });
    expect(previous?.overhead_p50_ms).toBeCloseTo(5);
    expect(latest).toMatchObject({ t_ms: 110_000, requests_per_s: 0.1, p50_ms: 1000, overhead_p50_ms: null });
    expect(points[0]).toMatchObject({ requests_per_s: 0, p50_ms: null, queued: 0 });
  });

  it('forgets buckets older than the window and ignores runs outside it', () => {
    let now = 0;
    const series = createChartSeries({
      bucketMs: 1000,
      buckets: 3,
      clock: { ...systemClock, now: () => now },
    });
    series.addRun(500, 10, null);
    now = 5000;
    series.addRun(500, 10, null); // outside the window
    series.addRun(9000, 10, null); // in the future
    expect(series.snapshot().points.every((point) => point.requests_per_s === 0)).toBe(true);
  });

  it('bounds the samples kept per bucket but keeps counting', () => {
    const series = createChartSeries({
      bucketMs: 1000,
      buckets: 2,
      maxSamplesPerBucket: 2,
      clock: { ...systemClock, now: () => 0 },
    });
    series.addRun(0, 1, null);
    series.addRun(0, 2, null);
    series.addRun(0, 1000, null);
    const latest = series.snapshot().points.at(-1);
    expect(latest).toMatchObject({ requests_per_s: 3, p99_ms: 2 });
  });

  it('uses nearest-rank percentiles', () => {
    expect(percentile([], 0.5)).toBeNull();
    expect(percentile([5], 0.99)).toBe(5);
    expect(percentile([4, 1, 3, 2], 0.5)).toBe(2);
    expect(percentile([4, 1, 3, 2], 0.99)).toBe(4);
  });
});
