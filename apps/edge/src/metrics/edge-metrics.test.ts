import { describe, expect, it } from '@jest/globals';
import type { RunEventPart } from '@iop/wire';
import { createEventBus } from '../events/event-bus.js';
import { EdgeMetrics } from './edge-metrics.js';

describe('EdgeMetrics run outcomes', () => {
  it('counts each run by its terminal event and nothing for the parts before it', async () => {
    const events = createEventBus();
    const metrics = new EdgeMetrics();
    const stop = metrics.followEvents(events);
    let seq = 0;
    const publish = (runId: string, part: RunEventPart) =>
      events.publish({ type: 'run', event: { runId, nodeId: 'n1', seq: (seq += 1), atUnixMs: 0, part } });
    for (let index = 0; index < 50; index += 1) publish('r1', { type: 'text-delta', text: 'x' });
    publish('r1', { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
    publish('r2', { type: 'error', code: 'boom', message: 'boom', retryable: false, backendMs: 0 });
    publish('r3', { type: 'cancelled', reason: 'client' });
    publish('r4', { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
    // The subscription reads asynchronously.
    await new Promise((resolve) => setImmediate(resolve));
    const body = (await metrics.render()).body;
    expect(body).toContain('iop_run_outcomes_total{outcome="completed"} 2');
    expect(body).toContain('iop_run_outcomes_total{outcome="error"} 1');
    expect(body).toContain('iop_run_outcomes_total{outcome="cancelled"} 1');
    stop();
  });
});

describe('EdgeMetrics circuits and retries', () => {
  it('exports each provider circuit as 0 closed, 1 open, 2 half_open, and counts retries by reason', async () => {
    const sample = (providerId: string, health: string) => ({
      providerId,
      nodeId: 'n1',
      capacity: 1,
      inFlight: 0,
      queued: 0,
      health,
    });
    const metrics = new EdgeMetrics({
      providerSnapshot: () => [sample('a', 'healthy'), sample('b', 'open'), sample('c', 'half_open')],
    });
    metrics.runRetries.inc({ surface: 'openai', reason: 'upstream_5xx' });
    metrics.childRuns.inc({ result: 'completed' });
    const body = (await metrics.render()).body;
    expect(body).toContain('iop_provider_circuit_state{provider="a",node="n1"} 0');
    expect(body).toContain('iop_provider_circuit_state{provider="b",node="n1"} 1');
    expect(body).toContain('iop_provider_circuit_state{provider="c",node="n1"} 2');
    expect(body).toContain('iop_run_retries_total{surface="openai",reason="upstream_5xx"} 1');
    expect(body).toContain('iop_child_runs_total{result="completed"} 1');
  });
});

describe('EdgeMetrics child queue wait', () => {
  it('exports iop_child_queue_wait_seconds as a histogram by model', async () => {
    const metrics = new EdgeMetrics();
    metrics.childQueueWaitSeconds.observe({ model: 'qwen' }, 0.002);
    metrics.childQueueWaitSeconds.observe({ model: 'qwen' }, 0.3);
    const body = (await metrics.render()).body;
    expect(body).toContain('# TYPE iop_child_queue_wait_seconds histogram');
    expect(body).toContain('iop_child_queue_wait_seconds_bucket{le="0.0025",model="qwen"} 1');
    expect(body).toContain('iop_child_queue_wait_seconds_bucket{le="0.5",model="qwen"} 2');
    expect(body).toContain('iop_child_queue_wait_seconds_count{model="qwen"} 2');
  });
});
