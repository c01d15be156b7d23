// The run registry's typed refusal (service/run-registry.ts here, or the edge that holds the run in cluster mode,
// cluster/cluster-runs.ts). It sits below both, so that a surface catching it and the cluster throwing it import
// the one class from where each may.

import { typedError } from '@iop/errors';

export type RunRegistryErrorCode =
  | 'registry_full'
  | 'duplicate_run'
  | 'shutting_down'
  | 'subscriber_too_slow'
  | 'too_many_subscribers'
  /** The edge holding a subscribed run left the fabric, or its stream broke. */
  | 'holder_lost'
  /** The durable record of the run could not be written (service/run-record-store.ts). */
  | 'store_failed';

/** A typed refusal of the run registry (here or on the edge that holds the run). */
export class RunRegistryError extends typedError<RunRegistryErrorCode>('RunRegistryError') {}
