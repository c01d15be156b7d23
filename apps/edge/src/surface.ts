// A surface is one outward-facing listener (OpenAI HTTP, A2A, admin gRPC, metrics, bootstrap, UI, ...) started by
// the edge runtime over the typed core. Surfaces only translate their protocol to EdgeService calls.
import type { EdgeCore } from './edge-core.js';

export interface Surface {
  /** Short name for logs ("openai", "a2a", "admin"). */
  name: string;
  /** Where it listens (host:port or URL). */
  address: string;
  close(): Promise<void>;
}

/**
 * Starts a surface, or returns undefined when it is disabled in config. A factory may declare a narrower parameter
 * (a `Pick<EdgeCore, ...>` of what it uses); the runtime passes the whole core.
 */
export type SurfaceFactory = (core: EdgeCore) => Promise<Surface | undefined>;
