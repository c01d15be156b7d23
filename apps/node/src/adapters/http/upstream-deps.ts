// What the HTTP upstream helpers take from an adapter's dependencies (AdapterDeps satisfies it): declared here
// so the HTTP layer does not import the adapter interface above it.
import type { Clock } from '@iop/clock';
import type { HttpClient } from './http-client.js';

export interface UpstreamDeps {
  fetch: typeof fetch;
  /** The keep-alive HTTP/1.1 client; `fetch` wrapped when absent. */
  http?: HttpClient;
  /** Monotonic milliseconds (performance.now() in production). */
  now: () => number;
  /** Times the upstream inactivity deadline. */
  clock: Clock;
  logger: { warn(fields: Record<string, unknown>, message: string): void };
}
