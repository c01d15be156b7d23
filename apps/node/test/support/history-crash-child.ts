// Child process for the crash test: starts a run, streams events into the history without end and prints
// `ready` once the first 64 are committed, so the parent can SIGKILL it in the middle of writing. Every turn also runs
// one short run (`turn-N`: start, one event, end), so the parent can check that run starts and ends survive as
// a prefix.
import { SqliteRunHistory } from '../../src/history/sqlite-run-history.js';

const databasePath = process.argv[2];
if (!databasePath) throw new Error('usage: history-crash-child <db path>');
// Every turn kept: the parent checks that the short runs survive as a prefix from turn-1.
const history = SqliteRunHistory.open({
  path: databasePath,
  batchSize: 8,
  flushIntervalMs: 5,
  retainRuns: 1_000_000,
});
history.recordStart({
  runId: 'crash-run',
  adapter: 'cli',
  target: 'fake-cli',
  sessionId: 'default',
  providerId: '',
  background: false,
  startedAt: Date.now(),
});
// The history's writer thread is up (its first commit answered) before the writes start: while it starts, a
// loop this tight would overrun the bounded queue.
await history.whenCommitted();
let seq = 0;
const write = (): void => {
  for (let index = 0; index < 8; index += 1) {
    seq += 1;
    history.appendEvent({
      runId: 'crash-run',
      seq,
      type: 'text-delta',
      payload: { text: `chunk ${seq}` },
      at: Date.now(),
    });
  }
  const turn = seq / 8;
  history.recordStart({
    runId: `turn-${turn}`,
    adapter: 'cli',
    target: 'fake-cli',
    sessionId: 'default',
    providerId: '',
    background: false,
    startedAt: Date.now(),
  });
  history.appendEvent({
    runId: `turn-${turn}`,
    seq: 1,
    type: 'text-delta',
    payload: { turn },
    at: Date.now(),
  });
  history.finish(`turn-${turn}`, { status: 'completed', endedAt: Date.now(), detail: 'stop' });
  if (seq === 64) void history.whenCommitted().then(() => process.stdout.write('ready\n'));
  setImmediate(write);
};
write();
