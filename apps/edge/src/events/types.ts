// Edge-internal events: node lifecycle and run events, fanned out in process to the console, admin and surfaces.
import type { RunEventPart } from '@iop/wire';

export interface EdgeNodeEvent {
  /** `discovered`: the node sent a discovery report (NodeSummary.discovered holds it). */
  kind: 'connected' | 'disconnected' | 'discovered';
  nodeId: string;
  alias: string;
  /**
   * Why it happened: `registered` for connected, `reported` for discovered; for disconnected `replaced`,
   * `heartbeat-timeout`, `shutdown`, `peer-closed`, the node's own Goodbye reason, or a wire error code (malformed_frame, frame_too_large,
   * truncated_frame, connection_closed).
   */
  reason: string;
  atUnixMs: number;
}

export type EdgeEvent = { type: 'node'; event: EdgeNodeEvent } | { type: 'run'; event: RunEventWithMeta };

export interface SubscribeOptions {
  /** Deliver the replay buffer (recent events) before live ones. */
  replay?: boolean;
  /** Ends the subscription. */
  signal?: AbortSignal;
  /**
   * Only events this accepts reach the subscriber (replay included); the rest cost it nothing — no queueing, no
   * wake-up. Called synchronously on every publish, so it must be cheap and must not throw.
   */
  filter?: (event: EdgeEvent) => boolean;
}

export interface EventBus {
  publish(event: EdgeEvent): void;
  /**
   * Live events as an async iterable. Each subscriber has its own bounded queue: a slow subscriber loses its
   * oldest undelivered events (and is told how many through `dropped`), never blocking others or the publisher.
   */
  subscribe(options?: SubscribeOptions): EventSubscription;
}

export interface EventSubscription extends AsyncIterable<EdgeEvent> {
  /** Events this subscriber lost to overflow so far. */
  readonly dropped: number;
  close(): void;
}

/** One run event as the edge tracks it: the node's part with the run, node and sequence it belongs to. */
export interface RunEventWithMeta {
  runId: string;
  nodeId: string;
  seq: number;
  atUnixMs: number;
  part: RunEventPart;
  /** On the run's first event on the bus only: how the service admitted it (the dashboard's runs table). */
  admitted?: RunAdmitted;
}

/** How a run got its capacity: the door it came through, what it asked for, where it went, how long it waited. */
export interface RunAdmitted {
  surface: string;
  /** The models[] id for model destinations; '' for explicit routes. */
  model: string;
  /** '' when no provider matched an explicit route. */
  providerId: string;
  queueMs: number;
  /** A child run (an agent's model call): the agent run it belongs to; absent for other runs. */
  parentRunId?: string;
}

/**
 * How a run ended — the one outcome vocabulary of the edge (run handles, metrics, usage records, the dashboard):
 * the node's terminal part `complete` → `completed`, `error` → `error`, `cancelled` → `cancelled`.
 */
export type RunOutcomeStatus = 'completed' | 'error' | 'cancelled';
