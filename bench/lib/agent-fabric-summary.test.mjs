import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentAnswer, ratio, summarizeAgentRuns } from './agent-fabric-summary.mjs';

const answer = (calls, { status = 200, done = true, timings = true } = {}) =>
  [
    'MODEL_ENDPOINT http://127.0.0.1:1/v1 key',
    ...calls.flatMap((ms, index) => [
      `MODEL_CALL ${index + 1} ${status} tok tok`,
      ...(timings ? [`MODEL_CALL_MS ${index + 1} ${ms}`] : []),
    ]),
    ...(done ? ['MODEL_CALLS_DONE'] : []),
  ].join('\n');

test('parseAgentAnswer reads calls, their timings and the done line', () => {
  assert.deepEqual(parseAgentAnswer(answer([30, 40.5])), {
    calls: [
      { index: 1, status: 200, ms: 30 },
      { index: 2, status: 200, ms: 40.5 },
    ],
    done: true,
  });
  const failed = parseAgentAnswer('MODEL_CALL 1 failed ECONNREFUSED\n');
  assert.equal(failed.done, false);
  assert.ok(Number.isNaN(failed.calls[0].status));
  assert.equal(parseAgentAnswer(answer([30], { timings: false })).calls[0].ms, undefined);
});

test('summarizeAgentRuns counts only complete runs and subtracts the backend time', () => {
  const runs = [
    { status: 200, wallMs: 100, answer: answer([25, 30]) },
    { status: 200, wallMs: 300, answer: answer([20, 60]) },
    { status: 200, wallMs: 50, answer: answer([25], { done: true }) }, // one call short
    { status: 200, wallMs: 50, answer: answer([25, 25], { done: false }) },
    { status: 503, wallMs: 10, answer: 'queue_full' },
  ];
  const summary = summarizeAgentRuns(runs, { calls: 2, backendMs: 20 });
  assert.equal(summary.agent_runs, 5);
  assert.equal(summary.agent_runs_completed, 2);
  assert.equal(summary.model_calls_ok, 7);
  assert.equal(summary.model_calls_expected, 10);
  assert.equal(summary.agent_wall_max_ms, 300);
  assert.equal(summary.agent_wall_p50_ms >= 100 && summary.agent_wall_p50_ms <= 300, true);
  // Calls of every run that reported timings: 25 30 20 60 25 25 25 → minus 20, floored at 0.
  assert.equal(summary.call_added_p99_ms, 40);
  assert.equal(summary.call_p99_ms, 60);
  // Calls 2..: 30 60 25 → p99 60, minus 20 → 40; p50 30.
  assert.equal(summary.later_call_p50_ms, 30);
  assert.equal(summary.later_call_added_p99_ms, 40);
});

test('summarizeAgentRuns of no runs gives nulls, not NaN', () => {
  const summary = summarizeAgentRuns([], { calls: 5, backendMs: 20 });
  assert.equal(summary.agent_runs_completed, 0);
  assert.equal(summary.agent_wall_p50_ms, null);
  assert.equal(summary.call_added_p50_ms, null);
});

test('ratio', () => {
  assert.equal(ratio(150, 100), 1.5);
  assert.equal(ratio(1, 3), 0.333);
  assert.equal(ratio(null, 100), null);
  assert.equal(ratio(100, 0), null);
});
