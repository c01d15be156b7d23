// The dashboard's memory of recent runs: an in-memory ring of the last `capacity` runs across the fabric, built
// from the run events on the edge's event bus (any surface's runs), each with a bounded timeline and text.
//
// Bounds (why: the edge may run for weeks and a run may stream megabytes): at most `capacity` runs (the oldest is
// forgotten first), `maxEventsPerRun` timeline entries per run (later ones are counted in `events_dropped`) and
// `maxTextChars` characters of answer text per run. Nothing is persisted: the node's own history is durable.
//
// A run's surface, model, provider and queue wait come with its first event on the bus (`admitted`, set by the
// service); without them (a run admitted before the dashboard started) provider and model are derived from the
// `start` part (node, adapter instance, target) against the config in force.
// Observers (the live feed) are told about every change of a run's summary; they must not throw.
import { systemClock, type Clock } from '../clock.js';
import type { RunEventPart } from '@iop/wire';
import type { RunEventWithMeta } from '../service/types.js';
import type { UiRun, UiRunDetail, UiRunEvent, UiRunStatus } from '@iop/ui-api';

export interface RunLogOptions {
  /** Runs kept (≥ 1). Default 500. */
  capacity?: number;
  /** Timeline entries kept per run (≥ 1). Default 200. */
  maxEventsPerRun?: number;
  /** Answer characters kept per run. Default 65536. */
  maxTextChars?: number;
  /** Provider and model of a run routed to (node, adapter, target); '' when none matches. */
  resolveRoute?: (nodeId: string, adapter: string, target: string) => { provider: string; model: string };
  clock?: Clock;
}

export interface RunFilter {
  status?: string;
  model?: string;
  provider?: string;
  node?: string;
  surface?: string;
  /** Substring of the run id, model, provider, node or target. */
  text?: string;
  limit?: number;
}

export type RunAnnotation = Partial<Pick<UiRun, 'surface' | 'model' | 'provider' | 'queue_ms'>>;

export interface RunLog {
  /** Feeds one run event (from the bus). */
  record(event: RunEventWithMeta): void;
  /** Adds what a surface knows about a run (creating its entry if the first event has not arrived yet). */
  annotate(runId: string, annotation: RunAnnotation): void;
  /** Newest first. */
  list(filter?: RunFilter): UiRun[];
  get(runId: string): UiRunDetail | undefined;
  /** Runs that have not ended. */
  running(): number;
  /** Calls `observer` with a run's summary whenever it changes; returns the unsubscribe function. */
  observe(observer: (run: UiRun) => void): () => void;
  /** Calls `observer` once per run that reaches a terminal status. */
  onFinished(observer: (run: UiRun) => void): () => void;
}

const TERMINAL: ReadonlySet<UiRunStatus> = new Set(['completed', 'error', 'cancelled']);
const SUMMARY_CHARS = 200;

interface Entry {
  run: UiRun;
  events: UiRunEvent[];
  eventsDropped: number;
  text: string;
  textTruncated: boolean;
}

export function createRunLog(options: RunLogOptions = {}): RunLog {
  const capacity = positive(options.capacity ?? 500, 'capacity');
  const maxEvents = positive(options.maxEventsPerRun ?? 200, 'maxEventsPerRun');
  const maxText = Math.max(0, options.maxTextChars ?? 65_536);
  const clock = options.clock ?? systemClock;
  const resolveRoute = options.resolveRoute ?? (() => ({ provider: '', model: '' }));
  // Map iteration order is insertion order: the first key is the oldest run.
  const entries = new Map<string, Entry>();
  const observers = new Set<(run: UiRun) => void>();
  const finishedObservers = new Set<(run: UiRun) => void>();
  const partLimits: PartLimits = { maxText, resolveRoute };

  function entryFor(runId: string, nodeId: string, atMs: number): Entry {
    let entry = entries.get(runId);
    if (entry) return entry;
    entry = {
      run: {
        run_id: runId,
        surface: '',
        model: '',
        provider: '',
        node_id: nodeId,
        adapter: '',
        target: '',
        status: 'running',
        started_ms: atMs,
        ended_ms: null,
        queue_ms: null,
        duration_ms: null,
        backend_ms: null,
        overhead_ms: null,
        prompt_tokens: null,
        completion_tokens: null,
        error: '',
      },
      events: [],
      eventsDropped: 0,
      text: '',
      textTruncated: false,
    };
    entries.set(runId, entry);
    while (entries.size > capacity) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
    return entry;
  }

  function notify(entry: Entry, finished: boolean): void {
    const snapshot = { ...entry.run };
    for (const observer of observers) observer(snapshot);
    if (finished) for (const observer of finishedObservers) observer(snapshot);
  }

  return {
    record(event) {
      if (event.part.type !== 'start' && !entries.has(event.runId) && TERMINAL_TYPES.has(event.part.type)) {
        // The end of a run the log never saw start (evicted or before the edge started): nothing to add to.
        return;
      }
      const entry = entryFor(event.runId, event.nodeId, event.atUnixMs);
      if (TERMINAL.has(entry.run.status)) return;
      if (event.admitted) {
        // What the service knew when it admitted the run beats what the route lookup guesses.
        entry.run.surface = event.admitted.surface;
        if (event.admitted.model) entry.run.model = event.admitted.model;
        if (event.admitted.providerId) entry.run.provider = event.admitted.providerId;
        entry.run.queue_ms = Math.round(event.admitted.queueMs);
        if (event.admitted.parentRunId) entry.run.parent_run_id = event.admitted.parentRunId;
      }
      if (entry.events.length < maxEvents) {
        entry.events.push({
          seq: event.seq,
          at_ms: event.atUnixMs,
          type: event.part.type,
          summary: summarize(event.part),
        });
      } else entry.eventsDropped += 1;
      const changed = applyPart(entry, event.part, event.atUnixMs, partLimits);
      if (changed) notify(entry, TERMINAL.has(entry.run.status));
    },
    annotate(runId, annotation) {
      const entry = entryFor(runId, '', clock.now());
      const run = entry.run;
      if (annotation.surface !== undefined) run.surface = annotation.surface;
      if (annotation.model !== undefined) run.model = annotation.model;
      if (annotation.provider !== undefined) run.provider = annotation.provider;
      if (annotation.queue_ms !== undefined) run.queue_ms = annotation.queue_ms;
      notify(entry, false);
    },
    list(filter = {}) {
      const limit = Math.max(1, Math.min(filter.limit ?? 100, capacity));
      const text = filter.text?.toLowerCase();
      const out: UiRun[] = [];
      const all = [...entries.values()];
      for (let index = all.length - 1; index >= 0 && out.length < limit; index -= 1) {
        const run = all[index]?.run;
        if (!run) continue;
        if (matches(run, filter, text)) out.push({ ...run });
      }
      return out;
    },
    get(runId) {
      const entry = entries.get(runId);
      if (!entry) return undefined;
      return {
        run: { ...entry.run },
        events: entry.events.map((event) => ({ ...event })),
        events_dropped: entry.eventsDropped,
        text: entry.text,
        text_truncated: entry.textTruncated,
      };
    },
    running() {
      let count = 0;
      for (const entry of entries.values()) if (!TERMINAL.has(entry.run.status)) count += 1;
      return count;
    },
    observe(observer) {
      observers.add(observer);
      return () => observers.delete(observer);
    },
    onFinished(observer) {
      finishedObservers.add(observer);
      return () => finishedObservers.delete(observer);
    },
  };
}

interface PartLimits {
  maxText: number;
  resolveRoute: NonNullable<RunLogOptions['resolveRoute']>;
}

/** Applies one run event part to its entry; true when the run's summary changed. */
function applyPart(entry: Entry, part: RunEventPart, atMs: number, limits: PartLimits): boolean {
  const run = entry.run;
  switch (part.type) {
    case 'start': {
      run.adapter = part.adapter;
      run.target = part.target;
      if (!run.provider || !run.model) {
        const route = limits.resolveRoute(run.node_id, part.adapter, part.target);
        run.provider ||= route.provider;
        run.model ||= route.model;
      }
      return true;
    }
    case 'text-delta':
      appendText(entry, part.text, limits.maxText);
      return false;
    case 'usage':
      run.prompt_tokens = part.usage.promptTokens;
      run.completion_tokens = part.usage.completionTokens;
      return true;
    case 'complete':
      finish(run, 'completed', atMs, part.backendMs, '');
      return true;
    case 'error':
      finish(run, 'error', atMs, part.backendMs, `${part.code}: ${part.message}`);
      return true;
    case 'cancelled':
      finish(run, 'cancelled', atMs, null, part.reason);
      return true;
    case 'reasoning-delta':
    case 'tool-call':
    case 'progress':
    case 'embeddings':
      return false;
    default: {
      const unknown: never = part;
      throw new Error(`unknown run event part ${JSON.stringify(unknown)}`);
    }
  }
}

function appendText(entry: Entry, text: string, maxText: number): void {
  const room = maxText - entry.text.length;
  if (room <= 0) {
    if (text.length > 0) entry.textTruncated = true;
    return;
  }
  if (text.length > room) entry.textTruncated = true;
  entry.text += text.slice(0, room);
}

function matches(run: UiRun, filter: RunFilter, text: string | undefined): boolean {
  if (filter.status && run.status !== filter.status) return false;
  if (filter.model && run.model !== filter.model) return false;
  if (filter.provider && run.provider !== filter.provider) return false;
  if (filter.node && run.node_id !== filter.node) return false;
  if (filter.surface && run.surface !== filter.surface) return false;
  return !text || searchable(run).includes(text);
}

const TERMINAL_TYPES: ReadonlySet<string> = new Set(['complete', 'error', 'cancelled']);

function finish(
  run: UiRun,
  status: UiRunStatus,
  atMs: number,
  backendMs: number | null,
  error: string,
): void {
  run.status = status;
  run.ended_ms = atMs;
  run.duration_ms = Math.max(0, atMs - run.started_ms);
  run.error = error;
  if (backendMs !== null && backendMs > 0) {
    run.backend_ms = backendMs;
    run.overhead_ms = Math.max(0, run.duration_ms - backendMs);
  }
}

function searchable(run: UiRun): string {
  return [run.run_id, run.model, run.provider, run.node_id, run.target, run.surface].join(' ').toLowerCase();
}

/** One line for the timeline. */
export function summarize(part: RunEventPart): string {
  switch (part.type) {
    case 'start':
      return `adapter=${part.adapter} target=${part.target} session=${part.sessionId}`;
    case 'text-delta':
    case 'reasoning-delta':
      return clip(part.text);
    case 'tool-call':
      return clip(`${part.call.name}(${part.call.argumentsJson})`);
    case 'usage':
      return `prompt=${part.usage.promptTokens} completion=${part.usage.completionTokens} total=${part.usage.totalTokens}`;
    case 'progress':
      return clip(`${part.kind}: ${part.message}`);
    case 'embeddings':
      return `${part.items.length} vector(s)`;
    case 'complete':
      return `finish=${part.finishReason} backend=${part.backendMs} ms${part.detail ? ` ${clip(part.detail)}` : ''}`;
    case 'error':
      return clip(`${part.code}: ${part.message}`);
    case 'cancelled':
      return clip(part.reason);
    default: {
      const unknown: never = part;
      throw new Error(`unknown run event part ${JSON.stringify(unknown)}`);
    }
  }
}

function clip(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer ≥ 1, got ${value}`);
  return value;
}
