// The pure half of the agent-fabric phase (./agent-fabric-phase.mjs): reading an agent run's answer (the testkit
// fake CLI's `--model-calls N --call-timings` output) and summing runs up. Unit tests: agent-fabric-summary.test.mjs.
import { summarize } from './load.mjs';

/**
 * The model calls an agent run's answer reports: `MODEL_CALL <i> <status> <text>` lines and, with
 * `--call-timings`, `MODEL_CALL_MS <i> <ms>` lines. `{ calls: [{ index, status, ms }], done }` (`status` a
 * number, or NaN for `failed`; `ms` undefined without a timing line; `done`: the MODEL_CALLS_DONE line seen).
 */
export function parseAgentAnswer(text) {
  const calls = new Map();
  let done = false;
  for (const line of String(text).split('\n')) {
    const call = /^MODEL_CALL (\d+) (\S+)/.exec(line);
    if (call) {
      calls.set(Number(call[1]), { index: Number(call[1]), status: Number(call[2]), ms: undefined });
      continue;
    }
    const timing = /^MODEL_CALL_MS (\d+) (\S+)/.exec(line);
    if (timing) {
      const entry = calls.get(Number(timing[1]));
      if (entry) entry.ms = Number(timing[2]);
      continue;
    }
    if (line.trim() === 'MODEL_CALLS_DONE') done = true;
  }
  return { calls: [...calls.values()].sort((a, b) => a.index - b.index), done };
}

/**
 * Sums agent runs up. `runs`: `[{ status, wallMs, answer }]` (HTTP status of the agent run, its wall time from the
 * client, its answer text). A run is completed when it answered 200, reported every one of `calls` model calls
 * with 200 and MODEL_CALLS_DONE. `backendMs`: the model backend's own time for a call; a call's time minus it is
 * what the fabric added to the call (the child run's queue wait plus its path: node loopback, node link, the
 * edge, the model's node), floored at 0; `later_*`: the same of calls 2..M only.
 */
export function summarizeAgentRuns(runs, { calls, backendMs }) {
  const parsed = runs.map((run) => ({ ...run, ...parseAgentAnswer(run.answer ?? '') }));
  const completed = parsed.filter(
    (run) =>
      run.status === 200 &&
      run.done &&
      run.calls.length === calls &&
      run.calls.every((call) => call.status === 200),
  );
  const callMs = parsed.flatMap((run) => run.calls.map((call) => call.ms).filter(Number.isFinite));
  // An agent's first call also pays its process's first fetch (undici loaded, a fresh connection): the later
  // calls are the fabric's steady cost.
  const laterMs = parsed.flatMap((run) =>
    run.calls
      .filter((call) => call.index > 1)
      .map((call) => call.ms)
      .filter(Number.isFinite),
  );
  const round = (value) => (Number.isFinite(value) ? Math.round(value * 100) / 100 : null);
  const wall = summarize(completed.map((run) => run.wallMs));
  const call = summarize(callMs);
  const added = summarize(callMs.map((ms) => Math.max(0, ms - backendMs)));
  const later = summarize(laterMs);
  const laterAdded = summarize(laterMs.map((ms) => Math.max(0, ms - backendMs)));
  return {
    agent_runs: runs.length,
    agent_runs_completed: completed.length,
    model_calls_ok: parsed.reduce(
      (sum, run) => sum + run.calls.filter((entry) => entry.status === 200).length,
      0,
    ),
    model_calls_expected: runs.length * calls,
    agent_wall_p50_ms: round(wall.p50),
    agent_wall_p99_ms: round(wall.p99),
    agent_wall_max_ms: round(wall.max),
    call_p50_ms: round(call.p50),
    call_p99_ms: round(call.p99),
    call_added_p50_ms: round(added.p50),
    call_added_p99_ms: round(added.p99),
    later_call_p50_ms: round(later.p50),
    later_call_added_p50_ms: round(laterAdded.p50),
    later_call_added_p99_ms: round(laterAdded.p99),
  };
}

/** `after / before`, rounded to 3 places; null when either is missing or `before` is 0. */
export function ratio(after, before) {
  if (!Number.isFinite(after) || !Number.isFinite(before) || before === 0) return null;
  return Math.round((after / before) * 1000) / 1000;
}
