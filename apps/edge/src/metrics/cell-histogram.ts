// A Prometheus histogram for hot paths, exported exactly as prom-client's Histogram would export it (same
// bucket, _sum and _count lines in the same order), registered on a prom-client Registry like any metric.
// Why not prom-client's own: its observe() validates labels, builds a label-string hash and looks the series
// up by it on every call; here a caller caches the series' cell once and observe() is a bucket search and
// three additions. Label sets are as bounded as the values callers pass (the same bounded route labels).
import type { Registry } from 'prom-client';
import { LabelTree } from './label-tree.js';

export interface HistogramCell {
  observe(value: number): void;
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

class Series implements HistogramCell {
  /** Observations per bucket (not cumulative); the last slot counts values above every bound. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly upperBounds: readonly number[],
  ) {
    this.counts = new Array<number>(upperBounds.length + 1).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.upperBounds;
    let index = 0;
    while (index < bounds.length && value > bounds[index]) index += 1;
    this.counts[index] = this.counts[index] + 1;
    this.sum += value;
    this.count += 1;
  }
}

export class CellHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  private readonly upperBounds: readonly number[];
  private readonly series: LabelTree<Series>;

  constructor(config: {
    name: string;
    help: string;
    labelNames: readonly L[];
    buckets: readonly number[];
    registers: Registry[];
  }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.upperBounds = [...config.buckets].sort((a, b) => a - b);
    const upperBounds = this.upperBounds;
    this.series = new LabelTree(config.labelNames, (labels) => new Series(labels, upperBounds));
    // Registry only needs name/help/type and get(); the cast is the registry's structural contract.
    for (const registry of config.registers) {
      registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
    }
  }

  /** The series of these label values (one per label name, in order), cached: keep it for hot paths. */
  cell(...values: string[]): HistogramCell {
    return this.series.get(values);
  }

  /** prom-client's call shape, for code off the hot path. */
  observe(labels: Record<L, string>, value: number): void {
    this.cell(...this.labelNames.map((name) => labels[name])).observe(value);
  }

  reset(): void {
    this.series.clear();
  }

  /** What the registry renders (the same values, labels and order as prom-client's Histogram). */
  getForPromString(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    values: ExportedValue[];
    aggregator: 'sum';
  }> {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.series.items) {
      let cumulative = 0;
      this.upperBounds.forEach((bound, index) => {
        cumulative += series.counts[index];
        values.push({
          labels: { le: bound },
          sharedLabels: series.labels,
          value: cumulative,
          metricName: bucketName,
        });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucketName },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    });
  }

  /** The values with each series' labels merged in (prom-client's get() shape). */
  async get(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    values: { labels: Record<string, string | number>; value: number; metricName: string }[];
    aggregator: 'sum';
  }> {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ labels, sharedLabels, value, metricName }) => ({
        labels: { ...labels, ...sharedLabels },
        value,
        metricName,
      })),
    };
  }
}
