// Run events as a discriminated union: what adapters yield on the node and what surfaces consume on the edge.
// The protobuf RunEvent is only the transport form; convert at the link with toWireRunEvent / fromWireRunEvent.
import { systemClock } from '@iop/clock';
import type { Embedding, RunEvent, ToolCall, Usage } from './messages.js';

export type RunEventPart =
  | { type: 'start'; sessionId: string; adapter: string; target: string }
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  | { type: 'tool-call'; call: ToolCall }
  /** Some of an embedding run's vectors, each with the index of its input. */
  | { type: 'embeddings'; items: Embedding[] }
  | { type: 'usage'; usage: Usage }
  | { type: 'progress'; kind: string; message: string; fields: Record<string, string> }
  | { type: 'complete'; detail: string; finishReason: string; backendMs: number }
  | { type: 'error'; code: string; message: string; retryable: boolean; backendMs: number }
  | { type: 'cancelled'; reason: string };

export type RunEventType = RunEventPart['type'];

/** Terminal parts end a run: exactly one of them is the last event of every run. */
export function isTerminalPart(
  part: RunEventPart,
): part is Extract<RunEventPart, { type: 'complete' | 'error' | 'cancelled' }> {
  return part.type === 'complete' || part.type === 'error' || part.type === 'cancelled';
}

export interface RunEventEnvelope {
  runId: string;
  seq: number;
  atUnixMs: number;
  part: RunEventPart;
}

export function toWireRunEvent(
  runId: string,
  seq: number,
  part: RunEventPart,
  atUnixMs = systemClock.now(),
): RunEvent {
  // Fields listed, not spread from a shared object: this runs once per event sent.
  switch (part.type) {
    case 'start':
      return {
        runId,
        seq,
        atUnixMs,
        event: {
          $case: 'start',
          start: { sessionId: part.sessionId, adapter: part.adapter, target: part.target },
        },
      };
    case 'text-delta':
      return { runId, seq, atUnixMs, event: { $case: 'textDelta', textDelta: { text: part.text } } };
    case 'reasoning-delta':
      return {
        runId,
        seq,
        atUnixMs,
        event: { $case: 'reasoningDelta', reasoningDelta: { text: part.text } },
      };
    case 'tool-call':
      return { runId, seq, atUnixMs, event: { $case: 'toolCall', toolCall: part.call } };
    case 'usage':
      return { runId, seq, atUnixMs, event: { $case: 'usage', usage: part.usage } };
    case 'embeddings':
      return { runId, seq, atUnixMs, event: { $case: 'embeddings', embeddings: { items: part.items } } };
    case 'progress':
      return {
        runId,
        seq,
        atUnixMs,
        event: {
          $case: 'progress',
          progress: { kind: part.kind, message: part.message, fields: part.fields },
        },
      };
    case 'complete':
      return {
        runId,
        seq,
        atUnixMs,
        event: {
          $case: 'complete',
          complete: { detail: part.detail, finishReason: part.finishReason, backendMs: part.backendMs },
        },
      };
    case 'error':
      return {
        runId,
        seq,
        atUnixMs,
        event: {
          $case: 'error',
          error: {
            code: part.code,
            message: part.message,
            retryable: part.retryable,
            backendMs: part.backendMs,
          },
        },
      };
    case 'cancelled':
      return { runId, seq, atUnixMs, event: { $case: 'cancelled', cancelled: { reason: part.reason } } };
    default: {
      const unreachable: never = part;
      throw new Error(`unknown run event part ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Returns undefined for an event with no body (a peer newer than us, or a malformed frame). */
export function fromWireRunEvent(event: RunEvent): RunEventEnvelope | undefined {
  const body = event.event;
  if (!body) return undefined;
  // The envelope is built once (no shared head object spread into it): one per received event.
  const part = partOf(body);
  return { runId: event.runId, seq: event.seq, atUnixMs: event.atUnixMs, part };
}

// Each part names its fields (same names and order as the message it comes from) rather than spreading the
// message into a literal: a spread builds the part by adding properties one by one, a literal in one allocation.
function partOf(body: NonNullable<RunEvent['event']>): RunEventPart {
  switch (body.$case) {
    case 'start': {
      const start = body.start;
      return { type: 'start', sessionId: start.sessionId, adapter: start.adapter, target: start.target };
    }
    case 'textDelta':
      return { type: 'text-delta', text: body.textDelta.text };
    case 'reasoningDelta':
      return { type: 'reasoning-delta', text: body.reasoningDelta.text };
    case 'toolCall':
      return { type: 'tool-call', call: body.toolCall };
    case 'usage':
      return { type: 'usage', usage: body.usage };
    case 'embeddings':
      return { type: 'embeddings', items: body.embeddings.items };
    case 'progress': {
      const progress = body.progress;
      return { type: 'progress', kind: progress.kind, message: progress.message, fields: progress.fields };
    }
    case 'complete': {
      const complete = body.complete;
      return {
        type: 'complete',
        detail: complete.detail,
        finishReason: complete.finishReason,
        backendMs: complete.backendMs,
      };
    }
    case 'error': {
      const error = body.error;
      return {
        type: 'error',
        code: error.code,
        message: error.message,
        retryable: error.retryable,
        backendMs: error.backendMs,
      };
    }
    case 'cancelled':
      return { type: 'cancelled', reason: body.cancelled.reason };
    default: {
      const unreachable: never = body;
      throw new Error(`unknown run event ${JSON.stringify(unreachable)}`);
    }
  }
}
