import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { createUsageMetrics } from './usage-metrics.js';
import type { UsageRecord } from './usage-store.js';

function record(principal: string, model: string, inputTokens: number, outputTokens: number): UsageRecord {
  return {
    atMs: 0,
    runId: 'r',
    principal,
    surface: 'openai',
    model,
    provider: 'p',
    node: 'n',
    inputTokens,
    outputTokens,
    queueMs: 0,
    durationMs: 0,
    outcome: 'completed',
  };
}

async function samples(registry: Registry): Promise<Map<string, number>> {
  const metric = (await registry.getMetricsAsJSON()).find((entry) => entry.name === 'iop_tokens_total');
  const out = new Map<string, number>();
  for (const value of (metric?.values ?? []) as { labels: Record<string, string>; value: number }[]) {
    out.set(`${value.labels['key']}|${value.labels['model']}|${value.labels['direction']}`, value.value);
  }
  return out;
}

describe('iop_tokens_total', () => {
  it('counts reported tokens by key, model and direction; anonymous runs as key="anonymous"', async () => {
    const registry = new Registry();
    const metrics = createUsageMetrics(registry);
    metrics.record(record('team-a', 'm1', 10, 4));
    metrics.record(record('team-a', 'm1', 5, 1));
    metrics.record(record('', 'm2', 3, 0));
    metrics.record(record('team-b', 'm1', 0, 0));
    expect(await samples(registry)).toEqual(
      new Map([
        ['team-a|m1|in', 15],
        ['team-a|m1|out', 5],
        ['anonymous|m2|in', 3],
      ]),
    );
  });

  it('counts refusals by key and limit', async () => {
    const registry = new Registry();
    const metrics = createUsageMetrics(registry);
    metrics.refused('team-a', 'rpm');
    metrics.refused('team-a', 'rpm');
    metrics.refused('team-b', 'token_budget');
    const metric = (await registry.getMetricsAsJSON()).find(
      (entry) => entry.name === 'iop_key_refusals_total',
    );
    expect(metric?.values.map((value) => [value.labels['key'], value.labels['limit'], value.value])).toEqual([
      ['team-a', 'rpm', 2],
      ['team-b', 'token_budget', 1],
    ]);
  });

  it('keeps the model label set bounded: past 256 models new ones count as "other"', async () => {
    const registry = new Registry();
    const metrics = createUsageMetrics(registry);
    for (let index = 0; index < 300; index += 1) metrics.record(record('k', `model-${index}`, 1, 0));
    const found = await samples(registry);
    expect(found.size).toBe(257);
    expect(found.get('k|other|in')).toBe(44);
  });
});
