// How a JSON-RPC method handler answers, without touching HTTP: one result, or a stream of task events (written
// as SSE by the app, each event in the method's wire shape).
import type { StreamEvent } from './a2a-types.js';

export interface RpcAnswer {
  /** Answers with one JSON-RPC result. */
  result(value: unknown): void;
  /**
   * Answers with an SSE stream: `open` gets a signal that aborts when the client goes away; each event is sent as
   * `toWire(event)` (the 0.3 shape when omitted).
   */
  stream(
    open: (signal: AbortSignal) => Promise<AsyncIterable<StreamEvent>>,
    toWire?: (event: StreamEvent) => unknown,
  ): Promise<void>;
}
