import { describe, expect, it } from '@jest/globals';
import { Counter, Registry } from 'prom-client';
import { LineCachedCounter } from './line-cached-counter.js';

describe('LineCachedCounter', () => {
  it('renders exactly what prom-client renders for the same increments, escaping included', async () => {
    const registry = new Registry();
    const reference = new Counter({
      name: 'test_disconnects_total',
      help: 'Disconnections by reason.',
      labelNames: ['node', 'reason'],
      registers: [registry],
    });
    const counter = new LineCachedCounter({
      name: 'test_disconnects_total',
      help: 'Disconnections by reason.',
      labelNames: ['node', 'reason'] as const,
    });
    const increments: [Record<'node' | 'reason', string>, number][] = [
      [{ node: 'n1', reason: 'heartbeat-timeout' }, 1],
      [{ node: 'n2', reason: 'peer said "bye"\nthen left \\ gone' }, 1],
      [{ node: 'n1', reason: 'heartbeat-timeout' }, 2],
      [{ node: 'n3', reason: '' }, 0.5],
    ];
    for (const [labels, value] of increments) {
      reference.inc(labels, value);
      counter.inc(labels, value);
    }
    expect(counter.render()).toBe(await registry.metrics());
    expect(counter.get({ node: 'n1', reason: 'heartbeat-timeout' })).toBe(3);
    expect(counter.get({ node: 'n9', reason: 'x' })).toBe(0);
  });

  it('renders its header alone before any increment, like prom-client', async () => {
    const registry = new Registry();
    new Counter({ name: 'test_total', help: 'Help.', labelNames: ['node'], registers: [registry] });
    expect(new LineCachedCounter({ name: 'test_total', help: 'Help.', labelNames: ['node'] }).render()).toBe(
      await registry.metrics(),
    );
  });

  it('keeps its page until a series moves, then shows the new value', () => {
    const counter = new LineCachedCounter({
      name: 'test_total',
      help: 'Help.',
      labelNames: ['node'] as const,
    });
    for (let index = 0; index < 1000; index += 1) counter.inc({ node: `n${index}` });
    const page = counter.render();
    expect(counter.render()).toBe(page);
    counter.inc({ node: 'n500' });
    const next = counter.render();
    expect(next).toContain('test_total{node="n500"} 2\n');
    expect(next).toContain('test_total{node="n499"} 1\n');
    expect(next.split('\n').filter((line) => line.startsWith('test_total{'))).toHaveLength(1000);
  });

  it('refuses to go down', () => {
    const counter = new LineCachedCounter({
      name: 'test_total',
      help: 'Help.',
      labelNames: ['node'] as const,
    });
    expect(() => counter.inc({ node: 'n1' }, -1)).toThrow(RangeError);
    expect(() => counter.inc({ node: 'n1' }, Number.NaN)).toThrow(RangeError);
    expect(counter.get({ node: 'n1' })).toBe(0);
  });
});
