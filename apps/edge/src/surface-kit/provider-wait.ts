// Starting a run that must not be refused merely because its node has not reconnected yet: a background response
// placed again right after an edge restart (nodes reconnect to a new edge process some seconds after it starts).
// A refusal that means "nothing to run on yet" (no provider, no node, the named node not connected) is retried
// with backoff on the injected clock until `untilMs`; any other outcome — a run, another refusal, the caller's
// abort — is returned at once. The first attempt is immediate.
import { sleep, type Clock } from '../clock.js';
import { isServiceError, type ServiceErrorCode } from '../service/errors.js';

/** How long a re-placed run waits for a provider at most (beyond it, or past its deadline, it is refused). */
export const PROVIDER_WAIT_GRACE_MS = 30_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 2_000;

const NOT_CONNECTED_YET: ReadonlySet<ServiceErrorCode> = new Set([
  'no_provider_available',
  'no_nodes',
  'node_not_found',
]);

export interface ProviderWait {
  clock: Clock;
  /** The run's cancel: the wait ends at once and the last refusal is thrown. */
  signal: AbortSignal;
  /** No attempt starts after this (epoch ms). */
  untilMs: number;
}

/** `start()`, retried while it is refused for want of a connected provider, until `wait.untilMs`. */
export async function startWhenProviderConnects<T>(start: () => Promise<T>, wait: ProviderWait): Promise<T> {
  let delay = FIRST_DELAY_MS;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      if (!isServiceError(error) || !NOT_CONNECTED_YET.has(error.code)) throw error;
      const left = wait.untilMs - wait.clock.now();
      if (left <= 0 || wait.signal.aborted) throw error;
      await sleep(wait.clock, Math.min(delay, left), wait.signal);
      if (wait.signal.aborted) throw error;
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }
}
