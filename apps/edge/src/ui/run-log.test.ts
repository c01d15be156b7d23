import { systemClock } from '../clock.js';
import { describe, expect, it } from '@jest/globals';
import type { RunEventPart } from '@iop/wire';
import { createRunLog } from './run-log.js';

const usage = {
  promptTokens: 5,
  completionTokens: 7,
  totalTokens: 12,
  reasoningTokens: 0,
  cachedTokens: 0,
  costUsd: 0,
};

function feed(log: ReturnType<typeof createRunLog>, runId: string, parts: [number, RunEventPart][]): void {
  parts.forEach(([atUnixMs, part], seq) => log.record({ runId, nodeId: 'n1', seq, atUnixMs, part }));
}

function fullRun(log: ReturnType<typeof createRunLog>, runId: string, start = 1000): void {
  feed(log, runId, [
    [start, { type: 'start', sessionId: 's', adapter: 'ollama', target: 'llama3.2:latest' }],
    [start + 100, { type: 'text-delta', text: 'hello ' }],
    [start + 200, { type: 'text-delta', text: 'world' }],
    [start + 250, { type: 'usage', usage }],
    [start + 400, { type: 'complete', detail: '', finishReason: 'stop', backendMs: 300 }],
  ]);
}

describe('run log', () => {
  it('builds a run summary, timeline and text from its events, with provider and model from the route', () => {
    const log = createRunLog({
      resolveRoute: (node, adapter, target) =>
        node === 'n1' && adapter === 'ollama' && target === 'llama3.2:latest'
          ? { provider: 'n1-ollama', model: 'llama' }
          : { provider: '', model: '' },
    });
    fullRun(log, 'r1');
    const detail = log.get('r1');
    expect(detail?.run).toMatchObject({
      run_id: 'r1',
      node_id: 'n1',
      adapter: 'ollama',
      target: 'llama3.2:latest',
      provider: 'n1-ollama',
      model: 'llama',
      status: 'completed',
      started_ms: 1000,
      ended_ms: 1400,
      duration_ms: 400,
      backend_ms: 300,
      overhead_ms: 100,
      prompt_tokens: 5,
      completion_tokens: 7,
    });
    expect(detail?.text).toBe('hello world');
    expect(detail?.events.map((event) => event.type)).toEqual([
      'start',
      'text-delta',
      'text-delta',
      'usage',
      'complete',
    ]);
    expect(log.running()).toBe(0);
  });

  it('keeps at most `capacity` runs, forgetting the oldest, and lists newest first', () => {
    const log = createRunLog({ capacity: 2 });
    fullRun(log, 'a');
    fullRun(log, 'b');
    fullRun(log, 'c');
    expect(log.list().map((run) => run.run_id)).toEqual(['c', 'b']);
    expect(log.get('a')).toBeUndefined();
  });

  it('bounds the timeline and the text of one run and says what it dropped', () => {
    const log = createRunLog({ maxEventsPerRun: 3, maxTextChars: 8 });
    fullRun(log, 'r1');
    const detail = log.get('r1');
    expect(detail?.events).toHaveLength(3);
    expect(detail?.events_dropped).toBe(2);
    expect(detail?.text).toBe('hello wo');
    expect(detail?.text_truncated).toBe(true);
    // The terminal part still ends the run even though its timeline entry was dropped.
    expect(detail?.run.status).toBe('completed');
  });

  it('filters by status, model and text', () => {
    const log = createRunLog({ resolveRoute: () => ({ provider: 'p1', model: 'm1' }) });
    fullRun(log, 'done-run');
    feed(log, 'live-run', [[5000, { type: 'start', sessionId: 's', adapter: 'cli', target: 'fake' }]]);
    feed(log, 'err-run', [
      [6000, { type: 'start', sessionId: 's', adapter: 'cli', target: 'fake' }],
      [6100, { type: 'error', code: 'backend_error', message: 'boom', retryable: false, backendMs: 0 }],
    ]);
    expect(log.list({ status: 'running' }).map((run) => run.run_id)).toEqual(['live-run']);
    expect(log.list({ status: 'error' })[0]?.error).toBe('backend_error: boom');
    expect(log.list({ text: 'DONE' }).map((run) => run.run_id)).toEqual(['done-run']);
    expect(log.list({ model: 'other' })).toEqual([]);
    expect(log.list({ limit: 1 })).toHaveLength(1);
    expect(log.running()).toBe(1);
  });

  it('tells observers about summary changes and finished runs exactly once each', () => {
    const log = createRunLog();
    const changes: string[] = [];
    const finished: string[] = [];
    const stop = log.observe((run) => changes.push(`${run.run_id}:${run.status}`));
    log.onFinished((run) => finished.push(run.run_id));
    fullRun(log, 'r1');
    // A late duplicate terminal part changes nothing.
    log.record({
      runId: 'r1',
      nodeId: 'n1',
      seq: 9,
      atUnixMs: 2000,
      part: { type: 'cancelled', reason: 'x' },
    });
    expect(changes).toEqual(['r1:running', 'r1:running', 'r1:completed']);
    expect(finished).toEqual(['r1']);
    stop();
    fullRun(log, 'r2');
    expect(changes).toHaveLength(3);
  });

  it('takes surface, model, provider and queue wait from how the service admitted the run', () => {
    const log = createRunLog({ resolveRoute: () => ({ provider: 'guessed', model: 'guessed' }) });
    log.record({
      runId: 'r1',
      nodeId: 'n1',
      seq: 1,
      atUnixMs: 1000,
      part: { type: 'start', sessionId: 's', adapter: 'ollama', target: 'llama3.2:latest' },
      admitted: { surface: 'openai', model: 'llama', providerId: 'n1-ollama', queueMs: 41.6 },
    });
    expect(log.get('r1')?.run).toMatchObject({
      surface: 'openai',
      model: 'llama',
      provider: 'n1-ollama',
      queue_ms: 42,
    });
  });

  it("names a child run's agent run (the dashboard nests it there)", () => {
    const log = createRunLog();
    const start = { type: 'start', sessionId: 's', adapter: 'ollama', target: 'qwen' } as const;
    log.record({
      runId: 'agent',
      nodeId: 'n1',
      seq: 1,
      atUnixMs: 1000,
      part: start,
      admitted: { surface: 'openai', model: 'coder', providerId: 'cli', queueMs: 0 },
    });
    log.record({
      runId: 'call',
      nodeId: 'n1',
      seq: 1,
      atUnixMs: 1001,
      part: start,
      admitted: { surface: 'openai', model: 'qwen', providerId: 'ol', queueMs: 0, parentRunId: 'agent' },
    });
    expect(log.get('call')?.run.parent_run_id).toBe('agent');
    expect(log.get('agent')?.run.parent_run_id).toBeUndefined();
  });

  it('lets a surface annotate a run before or after its first event', () => {
    const log = createRunLog({ clock: { ...systemClock, now: () => 500 } });
    log.annotate('r1', { surface: 'ui', model: 'm', provider: 'p', queue_ms: 12 });
    fullRun(log, 'r1');
    expect(log.get('r1')?.run).toMatchObject({ surface: 'ui', model: 'm', provider: 'p', queue_ms: 12 });
  });

  it('ignores the end of a run it never saw start', () => {
    const log = createRunLog();
    log.record({
      runId: 'x',
      nodeId: 'n1',
      seq: 4,
      atUnixMs: 1,
      part: { type: 'cancelled', reason: 'gone' },
    });
    expect(log.list()).toEqual([]);
  });
});
