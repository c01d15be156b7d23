import { describe, expect, it } from '@jest/globals';
import { Histogram, Registry } from 'prom-client';
import { CellHistogram } from './cell-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: [string, string, number][] = [
  ['openai', '/v1/chat/completions', 0.0004],
  ['openai', '/v1/chat/completions', 0.001],
  ['openai', '/v1/chat/completions', 0.05],
  ['openai', '/v1/responses', 7],
  ['a2a', 'rpc "quoted"\\route', 0.2],
  ['openai', '/v1/chat/completions', 0.0099],
];

describe('CellHistogram', () => {
  it('renders exactly what prom-client’s Histogram renders for the same observations', async () => {
    const expected = new Registry();
    const reference = new Histogram({
      name: 'test_seconds',
      help: 'Test histogram.',
      labelNames: ['surface', 'route'],
      buckets: BUCKETS,
      registers: [expected],
    });
    const actual = new Registry();
    const histogram = new CellHistogram({
      name: 'test_seconds',
      help: 'Test histogram.',
      labelNames: ['surface', 'route'] as const,
      buckets: BUCKETS,
      registers: [actual],
    });
    for (const [surface, route, value] of OBSERVATIONS) {
      reference.observe({ surface, route }, value);
      if (surface === 'a2a') histogram.observe({ surface, route }, value);
      else histogram.cell(surface, route).observe(value);
    }
    expect(await actual.metrics()).toBe(await expected.metrics());
    // get(): the same values (prom-client adds an always-empty exemplar field, exemplars being off).
    const referenceData = await reference.get();
    expect(await histogram.get()).toEqual({
      ...referenceData,
      values: referenceData.values.map(({ labels, value, metricName }) => ({ labels, value, metricName })),
    });
  });

  it('keeps one series per label set, refuses non-finite values and forgets everything on reset', async () => {
    const registry = new Registry();
    const histogram = new CellHistogram({
      name: 'test_other_seconds',
      help: 'h',
      labelNames: ['surface'] as const,
      buckets: BUCKETS,
      registers: [registry],
    });
    expect(histogram.cell('x')).toBe(histogram.cell('x'));
    expect(() => histogram.cell('x').observe(Number.NaN)).toThrow(TypeError);
    expect(() => histogram.cell()).toThrow(RangeError);
    histogram.cell('x').observe(0.5);
    expect(await registry.metrics()).toContain('test_other_seconds_count{surface="x"} 1');
    histogram.reset();
    expect(await registry.metrics()).not.toContain('surface="x"');
  });
});
