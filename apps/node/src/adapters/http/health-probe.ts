// Maps the outcome of a cheap "list models" call to a provider health state: an answer is healthy, an HTTP
// error or garbage is unhealthy (the server runs but does not serve), no connection or silence is unreachable.
// A failure carries its cause code (failure-cause.ts) beside the readable detail.
import type { HealthProbeResult } from '../health-probe-result.js';
import { failureCause } from './failure-cause.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

export async function probeByListing(list: () => Promise<string[]>): Promise<HealthProbeResult> {
  try {
    const models = await list();
    return { health: 'healthy', detail: `${models.length} model(s) served`, models };
  } catch (error) {
    const cause = failureCause(error);
    if (error instanceof UpstreamError) {
      if (error.code === 'upstream_unreachable' || error.code === 'upstream_timeout') {
        return { health: 'unreachable', detail: error.message, cause, models: [] };
      }
      const detail = error.status !== undefined ? `HTTP ${error.status}: ${error.message}` : error.message;
      return { health: 'unhealthy', detail, cause, models: [] };
    }
    if (error instanceof UpstreamCancelled)
      return { health: 'unreachable', detail: error.message, cause, models: [] };
    return {
      health: 'unhealthy',
      detail: error instanceof Error ? error.message : String(error),
      cause,
      models: [],
    };
  }
}
