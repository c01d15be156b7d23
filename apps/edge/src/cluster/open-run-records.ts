// Opens the fabric's copy of the run records at cluster start: the sealed KV bucket `iop_runs` (one value per
// key, entries kept RUN_MIRROR_TTL_MS after their last write, at most RUN_MIRROR_MAX_BYTES) and its writer, whose
// writes are counted on the edge's /metrics registry when one is given.
import type { Kvm } from '@nats-io/kv';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { FabricBus } from './fabric-bus.js';
import {
  FabricRunRecords,
  RUNS_BUCKET,
  RUN_MIRROR_MAX_BYTES,
  RUN_MIRROR_TTL_MS,
} from './run-record-mirror.js';
import { registerRunMirrorMetric } from './run-mirror-metrics.js';

export async function openRunRecords(deps: {
  kvm: Kvm;
  nc: FabricBus;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
}): Promise<FabricRunRecords> {
  const bucket = await deps.kvm.create(RUNS_BUCKET, {
    ttl: RUN_MIRROR_TTL_MS,
    history: 1,
    max_bytes: RUN_MIRROR_MAX_BYTES,
  });
  return new FabricRunRecords({
    kv: deps.nc.kv(bucket, RUNS_BUCKET, RUN_MIRROR_TTL_MS),
    edgeId: deps.nc.edgeId,
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.registry ? { onWrite: registerRunMirrorMetric(deps.registry) } : {}),
  });
}
