// Node history write rate: the node's own RunHistory (better-sqlite3, or node:sqlite where that cannot load) used
// the way the node runner uses it — recordStart, one appendEvent per streamed part, finish — on a fresh database.
import path from 'node:path';
import { openRunHistory } from '../../apps/node/dist/history/node-sqlite-fallback.js';

/** @param {{ dir: string, runs: number, eventsPerRun: number }} options */
export function measureHistory(options) {
  const opened = openRunHistory({ path: path.join(options.dir, 'history.db'), retainRuns: 1000 });
  const history = opened.history;
  const started = performance.now();
  let events = 0;
  for (let run = 0; run < options.runs; run += 1) {
    const runId = `bench-run-${run}`;
    history.recordStart({
      runId,
      adapter: 'backend',
      target: 'bench-model',
      sessionId: 'openai',
      providerId: 'bench-provider',
      background: false,
      startedAt: Date.now(),
    });
    for (let seq = 1; seq <= options.eventsPerRun; seq += 1) {
      history.appendEvent({
        runId,
        seq,
        type: 'text-delta',
        payload: { type: 'text-delta', text: 'tok ' },
        at: Date.now(),
      });
      events += 1;
    }
    history.finish(runId, { status: 'completed', endedAt: Date.now(), detail: 'stop' });
  }
  history.flush();
  const elapsedMs = performance.now() - started;
  history.close();
  return {
    backend: opened.backend,
    events,
    runs: options.runs,
    elapsedMs,
    eventsPerS: (events / elapsedMs) * 1000,
  };
}
