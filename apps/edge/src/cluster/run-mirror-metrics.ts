// The fabric copy of the run records (run-record-mirror.ts) counted on the edge's /metrics registry: every write
// by its result, so an operator sees when the copy lags (dropped: the bounded queue was full; failed: NATS refused
// or did not answer) while the edge's own records stay whole.
import { Counter, type Registry } from 'prom-client';
import { MIRROR_WRITE_RESULTS, type MirrorWriteResult } from './run-record-mirror.js';

/** Registers iop_run_record_mirror_writes_total{result}; returns the function that counts one write. */
export function registerRunMirrorMetric(registry: Registry): (result: MirrorWriteResult) => void {
  const writes = new Counter({
    name: 'iop_run_record_mirror_writes_total',
    help: "Writes of run records (background responses, A2A tasks) to the cluster's sealed KV copy, by result.",
    labelNames: ['result'],
    registers: [registry],
  });
  // Every result shown from the start (a zero says "never happened", not "not measured").
  for (const result of MIRROR_WRITE_RESULTS) writes.inc({ result }, 0);
  return (result) => writes.inc({ result });
}
