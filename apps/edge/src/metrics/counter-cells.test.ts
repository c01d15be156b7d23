import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { cellCounter } from './counter-cells.js';

describe('CounterCells', () => {
  it('exports cell increments as the counter series of the same labels, at every scrape', async () => {
    const registry = new Registry();
    const { counter, cells } = cellCounter({
      name: 'test_requests_total',
      help: 'test',
      labelNames: ['surface', 'status'] as const,
      registers: [registry],
    });
    const ok = cells.cell('openai', '200');
    ok.inc();
    ok.inc();
    cells.cell('openai', '429').inc(3);
    // The same label values give the same cell.
    cells.cell('openai', '200').inc();
    counter.inc({ surface: 'a2a', status: '200' });
    let text = await registry.metrics();
    expect(text).toContain('test_requests_total{surface="openai",status="200"} 3');
    expect(text).toContain('test_requests_total{surface="openai",status="429"} 3');
    expect(text).toContain('test_requests_total{surface="a2a",status="200"} 1');
    // Counts after a scrape are added, not lost or doubled.
    ok.inc();
    text = await registry.metrics();
    expect(text).toContain('test_requests_total{surface="openai",status="200"} 4');
    const values = (await counter.get()).values;
    expect(values.find((value) => value.labels['status'] === '429')?.value).toBe(3);
  });

  it('rejects a label value list of the wrong length', () => {
    const { cells } = cellCounter({
      name: 'test_other_total',
      help: 'test',
      labelNames: ['a', 'b'] as const,
      registers: [new Registry()],
    });
    expect(() => cells.cell('x')).toThrow(RangeError);
  });
});
