// Background Responses (`background: true`): the request is answered at once with a `queued` Response while the
// run proceeds in the edge, detached from the client connection; `GET /v1/responses/{id}` polls it and
// `POST /v1/responses/{id}/cancel` cancels it (leaving the provider queue or cancelling the run on the node).
//
// The store is in memory and bounded: at most `maxEntries` responses (the oldest finished ones are evicted first;
// when all are running a new background request is refused) and finished responses are forgotten after `ttlMs`.
// close() cancels every running one (edge shutdown).
import type { Logger } from '../logging.js';
import type { Clock } from '../clock.js';
import { mapOpenAIError, OpenAIHttpError } from './openai-error.js';
import { responseObject, responsesBody, type ResponsesOutputContext } from './responses-output.js';
import type { ResolvedRoute } from './route-resolver.js';
import type { RunStarter } from './run-starter.js';
import type { OutputOptions } from './run-output.js';
import type { RunSpec } from './run-spec.js';

type BackgroundStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

interface Entry {
  context: ResponsesOutputContext;
  status: BackgroundStatus;
  body: Record<string, unknown>;
  controller: AbortController;
  finishedAt?: number;
  /** The principal id that created it ('' = anonymous): only the same key may read or cancel it. */
  owner: string;
}

export interface BackgroundResponsesOptions {
  runs: RunStarter;
  clock: Clock;
  logger: Logger;
  /** Default 1000. */
  maxEntries?: number;
  /** How long a finished response stays retrievable. Default 1 hour. */
  ttlMs?: number;
}

export class BackgroundResponses {
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private closed = false;

  constructor(private readonly options: BackgroundResponsesOptions) {
    this.maxEntries = options.maxEntries ?? 1000;
    this.ttlMs = options.ttlMs ?? 60 * 60 * 1000;
  }

  /** Starts a background response and returns its `queued` body. */
  start(
    context: ResponsesOutputContext,
    route: ResolvedRoute,
    spec: RunSpec,
    output: OutputOptions,
  ): Record<string, unknown> {
    if (this.closed)
      throw new OpenAIHttpError(503, 'server_error', 'shutting_down', 'the edge is shutting down');
    this.makeRoom();
    const entry: Entry = {
      context,
      status: 'queued',
      body: withStatus(responseObject(context, 'in_progress', [], null), 'queued'),
      controller: new AbortController(),
      owner: spec.principal?.id ?? '',
    };
    this.entries.set(context.id, entry);
    void this.run(entry, route, spec, output);
    return entry.body;
  }

  /** The response's current body, for its owner (`owner`: the caller's principal id; another key gets 404). */
  get(id: string, owner?: string): Record<string, unknown> {
    return this.entry(id, owner).body;
  }

  /** Cancels a queued or running response; a finished one is returned unchanged. */
  cancel(id: string, owner?: string): Record<string, unknown> {
    const entry = this.entry(id, owner);
    if (entry.status === 'queued' || entry.status === 'in_progress') {
      this.finish(entry, 'cancelled', withStatus(entry.body, 'cancelled'));
      entry.controller.abort(new Error('cancelled by the caller'));
    }
    return entry.body;
  }

  /** Running and finished responses held. */
  get size(): number {
    return this.entries.size;
  }

  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) {
      if (entry.status === 'queued' || entry.status === 'in_progress') {
        this.finish(entry, 'cancelled', withStatus(entry.body, 'cancelled'));
        entry.controller.abort(new Error('edge shutting down'));
      }
    }
  }

  private async run(entry: Entry, route: ResolvedRoute, spec: RunSpec, output: OutputOptions): Promise<void> {
    const signal = entry.controller.signal;
    try {
      const run = await this.options.runs.start(route, spec, signal);
      try {
        if (entry.finishedAt === undefined) {
          entry.status = 'in_progress';
          entry.body = withStatus(entry.body, 'in_progress');
        }
        const collected = await run.collect(output);
        const body = responsesBody(entry.context, collected);
        this.finish(entry, body['status'] as BackgroundStatus, { ...body, background: true });
      } finally {
        run.finish('background response cancelled');
      }
    } catch (error) {
      if (signal.aborted) return;
      const mapped = mapOpenAIError(error);
      const failed = responseObject(entry.context, 'failed', [], null, {
        code: mapped.body.error.code ?? 'error',
        message: mapped.body.error.message,
      });
      this.finish(entry, 'failed', { ...failed, background: true });
      this.options.logger.debug(
        { response: entry.context.id, code: mapped.body.error.code },
        'background response failed',
      );
    }
  }

  private finish(entry: Entry, status: BackgroundStatus, body: Record<string, unknown>): void {
    if (entry.finishedAt !== undefined) return;
    entry.status = status;
    entry.body = body;
    entry.finishedAt = this.options.clock.now();
  }

  private entry(id: string, owner: string | undefined): Entry {
    this.expire();
    const entry = this.entries.get(id);
    // Another key's response is reported exactly like a missing one.
    if (!entry || entry.owner !== (owner ?? '')) {
      throw new OpenAIHttpError(
        404,
        'invalid_request_error',
        'response_not_found',
        `No response with id '${id}'`,
        'response_id',
      );
    }
    return entry;
  }

  private expire(): void {
    const cutoff = this.options.clock.now() - this.ttlMs;
    for (const [id, entry] of this.entries) {
      if (entry.finishedAt !== undefined && entry.finishedAt <= cutoff) this.entries.delete(id);
    }
  }

  private makeRoom(): void {
    this.expire();
    if (this.entries.size < this.maxEntries) return;
    // Map order is insertion order: the first finished entry is the oldest one.
    for (const [id, entry] of this.entries) {
      if (entry.finishedAt !== undefined) {
        this.entries.delete(id);
        return;
      }
    }
    throw new OpenAIHttpError(
      429,
      'rate_limit_error',
      'too_many_background_responses',
      `${this.maxEntries} background responses are already running`,
      'background',
      { 'retry-after': '1' },
    );
  }
}

function withStatus(body: Record<string, unknown>, status: BackgroundStatus): Record<string, unknown> {
  return { ...body, status, background: true };
}
