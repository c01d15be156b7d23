// Starts an OpenAI request's run through the service's admission path and reads it back as parts. The service
// owns the run (capacity, session slot, generation policy, deadline, cancel, release); this module only turns a
// resolved route into a destination, hands the surface's spec on as it is (the surface built it over `base`), and
// stops reading when the client goes away — the same abort signal is the run's cancel path inside the service.
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import type { Logger } from '../logging.js';
import { unwatchAbort, watchAbort } from '../abort-watchers.js';
import type {
  EdgeService,
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunSurface,
  SubmitOptions,
} from '../service/types.js';
import type { ResolvedRoute } from './route-resolver.js';
import { collectRun, RunCollector, type CollectedRun, type OutputOptions } from './run-output.js';
import type { RunBase, SurfaceRun } from './surface-run.js';

export interface RunStarterDeps {
  service: EdgeService;
  logger: Logger;
  /** Base of the session slots OpenAI runs take on CLI targets (`openai.session_id`). */
  sessionId: string;
  /** Run deadline passed to the node; 0 = the adapter's default. */
  timeoutMs: number;
  /** The surface runs are recorded under (usage, metrics); default `openai`. */
  surface?: RunSurface;
}

export interface StartedRun {
  readonly handle: RunHandle;
  /** The run's parts up to and including the terminal one; ends early (without a terminal part) on abort. */
  parts(): AsyncIterable<RunEventPart>;
  /**
   * Reads the whole run into its collected answer (what `collectRun` of `parts()` gives, through the events'
   * forEach: no promise per part); throws like collectRun. Either this or parts(), once.
   */
  collect(options: OutputOptions): Promise<CollectedRun>;
  /** Call once when done reading (finally): cancels the run if it has not ended (the caller stopped early). */
  finish(reason: string): void;
}

export interface RunStarter {
  /** What every spec started here carries (one object, shared): the surface builds its specs over it. */
  readonly base: RunBase;
  start(route: ResolvedRoute, run: SurfaceRun, signal: AbortSignal): Promise<StartedRun>;
}

export function createRunStarter(deps: RunStarterDeps): RunStarter {
  const surface = deps.surface ?? 'openai';
  const base: RunBase = Object.freeze({
    session: Object.freeze({ kind: 'slot', baseId: deps.sessionId }),
    timeoutMs: deps.timeoutMs > 0 ? deps.timeoutMs : undefined,
  });
  return {
    base,
    start(route, run, signal) {
      const { caller } = run;
      const options: SubmitOptions = { surface, signal, model: route.model };
      if (caller.principal) options.principal = caller.principal;
      if (caller.traceparent) options.traceparent = caller.traceparent;
      if (caller.parent) options.parent = caller.parent;
      // A promise chain: no async frame kept alive while the run request is on its way to the node.
      return deps.service
        .submitRun(destinationOf(route), run.spec, options)
        .then((handle) => new StartedRunImpl(handle, signal, deps.logger));
    },
  };
}

function destinationOf(route: ResolvedRoute): RunDestination {
  if (route.kind === 'pool') return { kind: 'model', model: route.model };
  return {
    kind: 'route',
    ...(route.node ? { node: route.node } : {}),
    adapter: route.adapter,
    target: route.target,
  };
}

class StartedRunImpl implements StartedRun {
  /** The run's terminal part was read. */
  ended = false;
  private finished = false;

  constructor(
    readonly handle: RunHandle,
    readonly signal: AbortSignal,
    readonly logger: Logger,
  ) {}

  parts(): AsyncIterable<RunEventPart> {
    return { [Symbol.asyncIterator]: () => new PartsIterator(this) };
  }

  collect(options: OutputOptions): Promise<CollectedRun> {
    const events = this.handle.events;
    const signal = this.signal;
    if (signal.aborted) return collectRun(this.parts(), options);
    const collector = new RunCollector(options);
    const reading = events.forEach((event) => {
      // Nothing is read once the client left (its abort may end the run before this reader hears of it).
      if (signal.aborted) return;
      if (collector.add(event.part) && isTerminalPart(event.part)) this.ended = true;
    });
    // The client leaving stops the reading (the run is cancelled in finish()), as in the parts iterator.
    const onAbort = reading.stop;
    watchAbort(signal, onAbort);
    return reading.done.then(() => {
      unwatchAbort(signal, onAbort);
      return collector.result();
    });
  }

  finish(reason: string): void {
    if (this.finished || this.ended) return;
    this.finished = true;
    this.handle.cancel(reason).catch((error: unknown) => {
      this.logger.warn({ err: error, run_id: this.handle.runId }, 'cancelling an abandoned run failed');
    });
  }
}

/**
 * The run's parts, read straight off its event stream (a hand-written iterator: an async generator with a
 * per-part race against the abort signal cost several promises per part). It ends after the terminal part, on
 * return(), or as soon as the signal aborts: one abort listener closes the event stream, which settles a pending
 * read as done.
 */
class PartsIterator implements AsyncIterator<RunEventPart> {
  private readonly events: AsyncIterator<RunEventWithMeta>;
  private closed = false;
  private readonly onAbort = () => this.close();

  constructor(private readonly run: StartedRunImpl) {
    this.events = run.handle.events[Symbol.asyncIterator]();
    watchAbort(run.signal, this.onAbort);
  }

  next(): Promise<IteratorResult<RunEventPart>> {
    if (this.closed || this.run.signal.aborted) {
      this.close();
      return Promise.resolve(DONE);
    }
    return this.events.next().then((result) => {
      if (result.done || this.closed) {
        this.close();
        return DONE;
      }
      const part = result.value.part;
      if (isTerminalPart(part)) {
        this.run.ended = true;
        this.close();
      }
      return { value: part, done: false };
    });
  }

  return(): Promise<IteratorResult<RunEventPart>> {
    this.close();
    return Promise.resolve(DONE);
  }

  /** Once: stops listening and ends this consumer's view of the run's events (the run is cancelled in finish()). */
  private close(): void {
    if (this.closed) return;
    this.closed = true;
    unwatchAbort(this.run.signal, this.onAbort);
    this.events.return?.().catch((error: unknown) => {
      this.run.logger.debug(
        { err: error, run_id: this.run.handle.runId },
        'closing a run event stream failed',
      );
    });
  }
}

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };
