// The node's adapter interface (version 1). An adapter turns a RunRequest into a stream of RunEventParts against
// one backend (a CLI, an Ollama server, an OpenAI-compatible server). It never knows about the edge or the link.
//
// Lifecycle: a factory builds the adapter from its AdapterInstance (no I/O in the factory); `run` and `command`
// may be called concurrently; `close` stops every session/process/request the adapter owns and is idempotent.
import {
  RunKind,
  type AdapterInstance,
  type NodeCommandRequest,
  type NodeCommandResponse,
  type ProviderLifecycleProgress,
  type RunEventPart,
  type RunRequest,
} from '@iop/wire';

import type { AdapterType } from '@iop/config';
import type { Clock } from '@iop/clock';
import type { AbortSignalLike } from './cancellation.js';
import type { HealthProbeResult } from './health-probe-result.js';
import type { HttpClient } from './http/http-client.js';
import type { ImageFetcher } from './http/image-fetch.js';
import type { ModelEndpoints } from './model-endpoint.js';

export const ADAPTER_INTERFACE_VERSION = 1;

/**
 * Run kinds besides chat this build executes (announced in RegisterRequest.run_kinds): the ollama and
 * openai_compat adapters embed and complete raw prompts; the CLI adapter answers every non-chat run with an error.
 */
export const NODE_RUN_KINDS: readonly RunKind[] = [RunKind.RUN_KIND_COMPLETION, RunKind.RUN_KIND_EMBEDDING];

/** The adapter types (config's union: the edge pushes `adapters[].type` from edge.yaml). */
export type { AdapterType };

export interface RunOptions {
  /**
   * Aborted on cancel, run deadline or node shutdown: the adapter must stop upstream work at once. Not an
   * AbortSignal (the executor creates one per run; an EventTarget costs several µs): an adapter that hands it to
   * an API wanting a real AbortSignal converts it with `toAbortSignal` (cancellation.ts).
   */
  signal: AbortSignalLike;
  /** W3C `traceparent` for the backend call (HTTP adapters send it as a header); none = not traced. */
  traceparent?: string;
}

/** The `traceparent` header for a backend request, when the run is traced. */
export function traceHeaders(options: RunOptions): Record<string, string> {
  return options.traceparent ? { traceparent: options.traceparent } : {};
}

export interface CommandOptions {
  signal: AbortSignal;
  /** Progress of long lifecycle commands (pull_model), relayed to the edge as it happens. */
  onProgress?: (progress: ProviderLifecycleProgress) => void;
}

export type { HealthCause, HealthProbeResult, HealthState, TargetHealth } from './health-probe-result.js';

export interface Adapter {
  readonly interfaceVersion: typeof ADAPTER_INTERFACE_VERSION;
  /** Instance name from config (e.g. `ollama`, `vllm-a`). */
  readonly name: string;
  readonly type: AdapterType;
  /**
   * Runs one request. The iterable yields a `start` part first and ends with exactly one terminal part
   * (`complete`, `error` or `cancelled`); failures are yielded as `error` parts, never thrown.
   */
  run(request: RunRequest, options: RunOptions): AsyncIterable<RunEventPart>;
  /** Node commands (capabilities, sessions, status, list_models, pull_model, ...). Unknown commands answer ok=false. */
  command(request: NodeCommandRequest, options: CommandOptions): Promise<NodeCommandResponse>;
  /** Ends a logical session and everything it runs. Returns false when no such session exists. */
  terminateSession(target: string, sessionId: string): Promise<boolean>;
  /** Cheap health probe (e.g. list models). Adapters without a backend to probe report healthy. */
  probeHealth(signal: AbortSignal): Promise<HealthProbeResult>;
  /**
   * The models the backend holds loaded in memory now (Ollama `GET /api/ps`), for the edge's placement. Only
   * adapters whose backend can say implement it; it throws when the backend does not answer.
   */
  residentModels?(signal: AbortSignal): Promise<string[]>;
  close(): Promise<void>;
}

/** Dependencies every adapter factory receives (injected so tests pass fakes). */
export interface AdapterDeps {
  fetch: typeof fetch;
  /** The HTTP adapters' upstream client (createNodeHttpClient's keep-alive HTTP/1.1 client in production); `fetch` wrapped when absent. */
  http?: HttpClient;
  logger: AdapterLogger;
  /**
   * Fetches ChatMessage.image_urls for adapters whose backend takes only inline images (Ollama) when the run sets
   * fetch_image_urls; absent = such runs fail with `image_fetch_failed`. Production: createImageFetcher().
   */
  fetchImage?: ImageFetcher;
  /**
   * Milliseconds on a monotonic clock with sub-millisecond precision (performance.now() in production), for the
   * durations adapters measure: the backend time of a run (the edge subtracts it from its own time for the
   * overhead figure, so whole milliseconds would make that figure jump by 1 ms), timeouts, progress intervals.
   * Not a wall clock.
   */
  now: () => number;
  /** The node's clock: timers of the adapters (the upstream inactivity deadline). */
  clock: Clock;
  /**
   * Model endpoints for runs with RunRequest.model_access (a `fabric_model` CLI profile); absent = such a run
   * fails with `model_endpoint_unavailable`.
   */
  modelEndpoints?: ModelEndpoints;
}

export interface AdapterLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export type AdapterFactory = (instance: AdapterInstance, deps: AdapterDeps) => Adapter;
