// Background Responses (`background: true`): the request is answered at once with a `queued` Response while the
// run proceeds in the edge, detached from the client connection; `GET /v1/responses/{id}` polls it and
// `POST /v1/responses/{id}/cancel` cancels it (leaving the provider queue or cancelling the run on the node).
//
// This file runs the response and translates it into the Response object; the service's run registry
// (service/run-registry.ts, kind `openai.response`) holds it: its bounds (at most so many per edge, the oldest
// finished ones evicted first, a new background request refused with 429 when all are running; finished ones
// forgotten after a TTL), the owner check (another key's response is a 404 like an unknown id) and, in cluster
// mode, the lookup of a response another edge holds. close() cancels the responses this surface started.
//
// Edge restarts (response-recovery.ts): a response is registered with its resume payload (response-resume.ts),
// which the registry keeps only while it is `queued`. When an edge restarts before the run was dispatched, the
// registry hands it back here: it is planned again (response-resumption.ts) and placed through the same runner,
// under the same id (GET goes queued → in_progress → final; cancel works), with what is left of its deadline
// counted from the original submission, waiting up to PROVIDER_WAIT_GRACE_MS (and never past that deadline) for a
// provider while the nodes reconnect.
import { type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { RegisteredRun, RestoredRun, RunKey, RunRegistry } from '../service/run-registry.js';
import { PROVIDER_WAIT_GRACE_MS, startWhenProviderConnects } from '../surface-kit/provider-wait.js';
import { RunRegistryError } from '../run-registry-error.js';
import { mapOpenAIError, OpenAIHttpError } from './openai-error.js';
import { RESPONSE_DURABILITY } from './response-recovery.js';
import { parseResponseResume, remainingDeadlineMs } from './response-resume.js';
import type { ResponseResumption, ResumedResponse } from './response-resumption.js';
import { responseObject, responsesBody, type ResponsesOutputContext } from './responses-output.js';
import type { ResolvedRoute } from '../surface-kit/route-resolver.js';
import type { RunStarter } from '../surface-kit/run-starter.js';
import type { OutputOptions } from '../surface-kit/run-output.js';
import type { StartedRun } from '../surface-kit/run-starter.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';

type BackgroundStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** A response this surface started that has not finished. */
interface Running {
  context: ResponsesOutputContext;
  registered: RegisteredRun;
  controller: AbortController;
  onEnded: ((response: Record<string, unknown>) => void) | undefined;
}

export interface BackgroundResponsesOptions {
  runs: RunStarter;
  /** The service's run registry, where the responses are held and looked up. */
  registry: RunRegistry;
  logger: Logger;
  clock: Clock;
  /** Plans a response an earlier edge process left queued; none = such responses end as `edge_restarted`. */
  resumption?: ResponseResumption;
}

/** A re-placed response's deadline: `openai.timeout_sec` (the run base's) counted from its first submission. */
interface ResumedDeadline {
  submittedAtMs: number;
  timeoutMs: number | undefined;
}

const KIND = 'openai.response';

export class BackgroundResponses {
  private readonly running = new Map<string, Running>();
  private closed = false;

  constructor(private readonly options: BackgroundResponsesOptions) {
    // Responses an earlier edge process left running become `failed` (edge_restarted) now; queued ones with a
    // resume payload are placed again.
    options.registry.durability(KIND, {
      ...RESPONSE_DURABILITY,
      resume: (restored) => this.resume(restored),
    });
  }

  /**
   * Starts a background response and returns its `queued` body; `onEnded` receives its final body (stored
   * conversations) before the registry publishes it.
   */
  start(
    context: ResponsesOutputContext,
    route: ResolvedRoute,
    requested: SurfaceRun,
    output: OutputOptions,
    onEnded?: (response: Record<string, unknown>) => void,
    resume?: unknown,
  ): Record<string, unknown> {
    if (this.closed)
      throw new OpenAIHttpError(503, 'server_error', 'shutting_down', 'the edge is shutting down');
    const key = keyOf(context.id, requested.caller.principal?.id);
    const body = withStatus(responseObject(context, 'in_progress', [], null), 'queued');
    const controller = new AbortController();
    let registered: RegisteredRun;
    try {
      registered = this.options.registry.add(
        key,
        body,
        (reason) => this.cancelled(context.id, registered, controller, reason),
        resume,
      );
    } catch (error) {
      throw registryRefusal(error);
    }
    const running: Running = { context, registered, controller, onEnded };
    this.running.set(context.id, running);
    void this.run(running, route, requested, output);
    return body;
  }

  /** The cancel of a response: the caller sees `cancelled` at once; the run leaves the queue or is cancelled. */
  private cancelled(
    id: string,
    registered: RegisteredRun,
    controller: AbortController,
    reason: string,
  ): void {
    registered.end(withStatus(registered.state as Record<string, unknown>, 'cancelled'));
    this.running.delete(id);
    controller.abort(new Error(reason));
  }

  /**
   * A response an earlier process left queued: taken over and placed again, or ended `failed` naming why it
   * cannot be. A payload this version cannot read is not taken (the registry ends it as `edge_restarted`).
   */
  private resume(restored: RestoredRun): void {
    const payload = parseResponseResume(restored.payload);
    const resumption = this.options.resumption;
    if (!payload || !resumption || this.closed) return;
    const id = restored.key.id;
    const controller = new AbortController();
    const registered: RegisteredRun = restored.take((reason) =>
      this.cancelled(id, registered, controller, reason),
    );
    let plan: ResumedResponse;
    try {
      plan = resumption.plan(restored.key, restored.state, payload);
    } catch (error) {
      const mapped = mapOpenAIError(error);
      registered.end({
        ...(registered.state as Record<string, unknown>),
        status: 'failed',
        background: true,
        error: { code: mapped.body.error.code ?? 'error', message: mapped.body.error.message },
      });
      this.options.logger.info(
        { response: id, code: mapped.body.error.code },
        'background response left queued by the previous edge process not placed again',
      );
      return;
    }
    const running: Running = { context: plan.context, registered, controller, onEnded: plan.onEnded };
    this.running.set(id, running);
    this.options.logger.info({ response: id }, 'placing again a background response left queued');
    void this.run(running, plan.route, plan.run, plan.output, {
      submittedAtMs: plan.submittedAtMs,
      timeoutMs: this.options.runs.base.timeoutMs,
    });
  }

  /** The response's current body, for its owner (`owner`: the caller's principal id); another key's: undefined. */
  async find(id: string, owner?: string): Promise<Record<string, unknown> | undefined> {
    const found = await this.options.registry.get(keyOf(id, owner));
    return found?.state as Record<string, unknown> | undefined;
  }

  /** The response's current body, for its owner; 404 for another key's or an unknown one. */
  async get(id: string, owner?: string): Promise<Record<string, unknown>> {
    const found = await this.find(id, owner);
    if (!found) throw responseNotFound(id);
    return found;
  }

  /** Forgets the owner's response (a running one is cancelled first); whether there was one. */
  delete(id: string, owner?: string): Promise<boolean> {
    return this.options.registry.delete(keyOf(id, owner));
  }

  /** Cancels a queued or running response; a finished one is returned unchanged. */
  async cancel(id: string, owner?: string): Promise<Record<string, unknown>> {
    const result = await this.options.registry.cancel(keyOf(id, owner), 'cancelled by the caller');
    if (!result) throw responseNotFound(id);
    return result.view.state as Record<string, unknown>;
  }

  /** Responses of this edge held in the registry, running and finished. */
  get size(): number {
    return this.options.registry.size(KIND);
  }

  /** Cancels every response this surface started that is still running, and refuses new ones. */
  close(): void {
    this.closed = true;
    for (const { registered, controller } of [...this.running.values()]) {
      registered.end(withStatus(registered.state as Record<string, unknown>, 'cancelled'));
      controller.abort(new Error('edge shutting down'));
    }
    this.running.clear();
  }

  /**
   * Starts a re-placed response with what is left of its deadline, retrying while no provider is connected yet
   * (up to PROVIDER_WAIT_GRACE_MS, never past the deadline); a deadline that has passed is the supervisor's
   * `run_timeout`, named as such.
   */
  private async startResumed(
    route: ResolvedRoute,
    requested: SurfaceRun,
    signal: AbortSignal,
    deadline: ResumedDeadline,
    id: string,
  ): Promise<StartedRun> {
    const { clock, runs } = this.options;
    const left = (): number | undefined =>
      remainingDeadlineMs(deadline.timeoutMs, deadline.submittedAtMs, clock.now());
    const passed = (): OpenAIHttpError => deadlinePassed(id, deadline.timeoutMs ?? 0, deadline.submittedAtMs);
    const deadlineAt =
      deadline.timeoutMs === undefined ? Infinity : deadline.submittedAtMs + deadline.timeoutMs;
    try {
      return await startWhenProviderConnects(
        () => {
          const remaining = left();
          if (remaining !== undefined && remaining <= 0) throw passed();
          if (remaining !== undefined) requested.spec.timeoutMs = remaining;
          return runs.start(route, requested, signal);
        },
        { clock, signal, untilMs: Math.min(deadlineAt, clock.now() + PROVIDER_WAIT_GRACE_MS) },
      );
    } catch (error) {
      // Gave up waiting for a provider because the deadline came: the deadline is why.
      const remaining = left();
      if (remaining !== undefined && remaining <= 0 && !signal.aborted) throw passed();
      throw error;
    }
  }

  private async run(
    running: Running,
    route: ResolvedRoute,
    requested: SurfaceRun,
    output: OutputOptions,
    resumed?: ResumedDeadline,
  ): Promise<void> {
    const { context, registered, controller, onEnded } = running;
    const signal = controller.signal;
    try {
      const run = resumed
        ? await this.startResumed(route, requested, signal, resumed, context.id)
        : await this.options.runs.start(route, requested, signal);
      try {
        registered.update(withStatus(registered.state as Record<string, unknown>, 'in_progress'));
        const collected = await run.collect(output);
        const ended = { ...responsesBody(context, collected), background: true };
        onEnded?.(ended);
        registered.end(ended);
      } finally {
        run.finish('background response cancelled');
      }
    } catch (error) {
      if (signal.aborted) return;
      const mapped = mapOpenAIError(error);
      const failed = responseObject(context, 'failed', [], null, {
        code: mapped.body.error.code ?? 'error',
        message: mapped.body.error.message,
      });
      registered.end({ ...failed, background: true });
      this.options.logger.debug(
        { response: context.id, code: mapped.body.error.code },
        'background response failed',
      );
    } finally {
      this.running.delete(context.id);
    }
  }
}

/** The run deadline (the supervisor's `run_timeout`) passed before a response left queued could be placed again. */
function deadlinePassed(id: string, timeoutMs: number, submittedAtMs: number): OpenAIHttpError {
  return new OpenAIHttpError(
    504,
    'timeout_error',
    'run_timeout',
    `run of response ${id} exceeded its ${timeoutMs.toString()} ms deadline (openai.timeout_sec, counted from its ` +
      `submission at ${new Date(submittedAtMs).toISOString()}) before it could be placed again after the edge ` +
      'restarted; send the request again.',
  );
}

function keyOf(id: string, owner: string | undefined): RunKey {
  return { principal: owner ?? '', kind: KIND, id };
}

/** 404 for a response id the caller does not own or that does not exist (the two are not told apart). */
export function responseNotFound(id: string): OpenAIHttpError {
  // Another key's response is reported exactly like a missing one.
  return new OpenAIHttpError(
    404,
    'invalid_request_error',
    'response_not_found',
    `No response with id '${id}'`,
    'response_id',
  );
}

function registryRefusal(error: unknown): unknown {
  if (!(error instanceof RunRegistryError)) return error;
  switch (error.code) {
    case 'registry_full':
      return new OpenAIHttpError(
        429,
        'rate_limit_error',
        'too_many_background_responses',
        `too many background responses are already running: ${error.message}`,
        'background',
        { 'retry-after': '1' },
      );
    case 'shutting_down':
      return new OpenAIHttpError(503, 'server_error', 'shutting_down', 'the edge is shutting down');
    case 'store_failed':
      return new OpenAIHttpError(503, 'server_error', 'store_failed', error.message);
    case 'duplicate_run':
    case 'holder_lost':
    case 'subscriber_too_slow':
    case 'too_many_subscribers':
      // A response id is fresh per request and add() neither streams nor asks the fabric: the edge's own fault.
      return new OpenAIHttpError(500, 'server_error', error.code, error.message);
  }
}

function withStatus(body: Record<string, unknown>, status: BackgroundStatus): Record<string, unknown> {
  return { ...body, status, background: true };
}
