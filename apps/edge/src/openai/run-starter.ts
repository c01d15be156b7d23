// Starts an OpenAI request's run through the service's admission path and reads it back as parts. The service
// owns the run (capacity, session slot, generation policy, deadline, cancel, release); this module only turns a
// resolved route into a destination, and stops reading when the client goes away — the same abort signal is the
// run's cancel path inside the service.
import { isTerminalPart, type RunEventPart } from '@iop/wire';
import type { Logger } from '../logging.js';
import type {
  EdgeService,
  RunDestination,
  RunEventWithMeta,
  RunHandle,
  RunSpec as ServiceRunSpec,
} from '../service/types.js';
import type { ResolvedRoute } from './route-resolver.js';
import type { RunSpec } from './run-spec.js';

export interface RunStarterDeps {
  service: EdgeService;
  logger: Logger;
  /** Base of the session slots OpenAI runs take on CLI targets (`openai.session_id`). */
  sessionId: string;
  /** Run deadline passed to the node; 0 = the adapter's default. */
  timeoutMs: number;
}

export interface StartedRun {
  readonly handle: RunHandle;
  /** The run's parts up to and including the terminal one; ends early (without a terminal part) on abort. */
  parts(): AsyncIterable<RunEventPart>;
  /** Call once when done reading (finally): cancels the run if it has not ended (the caller stopped early). */
  finish(reason: string): void;
}

export interface RunStarter {
  start(route: ResolvedRoute, spec: RunSpec, signal: AbortSignal): Promise<StartedRun>;
}

export function createRunStarter(deps: RunStarterDeps): RunStarter {
  return {
    async start(route, spec, signal) {
      const handle = await deps.service.submitRun(destinationOf(route), serviceSpec(spec, deps), {
        surface: 'openai',
        signal,
        model: route.model,
        ...(spec.principal ? { principal: spec.principal } : {}),
        ...(spec.traceparent ? { traceparent: spec.traceparent } : {}),
      });
      return new StartedRunImpl(handle, signal, deps.logger);
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

function serviceSpec(spec: RunSpec, deps: RunStarterDeps): ServiceRunSpec {
  return {
    session: { kind: 'slot', baseId: deps.sessionId },
    messages: spec.messages,
    tools: spec.tools,
    toolChoiceJson: spec.toolChoiceJson,
    params: spec.params,
    reasoningRequested: spec.reasoningRequested,
    workspace: spec.workspace,
    timeoutMs: deps.timeoutMs > 0 ? deps.timeoutMs : undefined,
    metadata: spec.metadata,
  };
}

class StartedRunImpl implements StartedRun {
  private ended = false;
  private finished = false;

  constructor(
    readonly handle: RunHandle,
    private readonly signal: AbortSignal,
    private readonly logger: Logger,
  ) {}

  async *parts(): AsyncIterable<RunEventPart> {
    const iterator = this.handle.events[Symbol.asyncIterator]();
    // One abort listener for the whole run that settles whichever read is pending. (Promise.race against a
    // long-lived abort promise would pile up one reaction per part on it for the length of the stream.)
    let settlePending: ((value: typeof ABORTED) => void) | undefined;
    const onAbort = () => settlePending?.(ABORTED);
    this.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        if (this.signal.aborted) return;
        const pending = iterator.next();
        const next = await new Promise<IteratorResult<RunEventWithMeta> | typeof ABORTED>(
          (resolve, reject) => {
            settlePending = resolve;
            pending.then(resolve, reject);
          },
        );
        settlePending = undefined;
        if (next === ABORTED || next.done) return;
        const part = next.value.part;
        if (isTerminalPart(part)) this.ended = true;
        yield part;
        if (this.ended) return;
      }
    } finally {
      this.signal.removeEventListener('abort', onAbort);
      // Ends this consumer's view of the run's event stream; the run itself is cancelled in finish().
      iterator.return?.().catch((error: unknown) => {
        this.logger.debug({ err: error, run_id: this.handle.runId }, 'closing a run event stream failed');
      });
    }
  }

  finish(reason: string): void {
    if (this.finished || this.ended) return;
    this.finished = true;
    this.handle.cancel(reason).catch((error: unknown) => {
      this.logger.warn({ err: error, run_id: this.handle.runId }, 'cancelling an abandoned run failed');
    });
  }
}

const ABORTED = Symbol('aborted');
