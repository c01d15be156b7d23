// A surface is one outward-facing listener (OpenAI HTTP, A2A, admin gRPC, metrics, ...) started by the edge
// runtime over the shared service and event bus. Surfaces only translate their protocol to EdgeService calls.
import type { EdgeConfig } from '@iop/config';
import type { EventBus } from './events/types.js';
import type { Logger } from './logging.js';
import type { NodeRegistry } from './node/node-registry.js';
import type { EdgeService } from './service/types.js';

export interface Surface {
  /** Short name for logs ("openai", "a2a", "admin"). */
  name: string;
  /** Where it listens (host:port or URL). */
  address: string;
  close(): Promise<void>;
}

export interface SurfaceContext {
  config: EdgeConfig;
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  registry: NodeRegistry;
  /**
   * Shared objects that are not part of the core (e.g. the provider pool, a refresh handler): a surface factory
   * may put one here for factories started after it. Keys are documented by whoever sets them.
   */
  extras: Map<string, unknown>;
}

/** Starts a surface, or returns undefined when it is disabled in config. */
export type SurfaceFactory = (context: SurfaceContext) => Promise<Surface | undefined>;
