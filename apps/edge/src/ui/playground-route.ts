// POST /api/v1/playground: a prompt to a model, its answer streamed back as server-sent events (meta, delta,
// done). The run is started by the surface (ui-surface.ts: the service's admission, as an OpenAI request would
// be) and finished exactly once, which cancels it when the client went away. Bounded: at most `maxPlaygrounds`
// at once (503 over it); `close()` aborts every running one.
import type http from 'node:http';
import type { UiPlaygroundEvents } from '@iop/ui-api';
import type { RunEventPart } from '@iop/wire';
import type { Clock } from '../clock.js';
import type { RunLog } from './run-log.js';
import { UiError } from './errors.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { checkMutation, readJson, requiredString, sseFrame, startSse } from './ui-http.js';

/** A playground run as the surface starts it: already placed on a provider, its parts ending after the terminal. */
export interface PlaygroundRun {
  runId: string;
  providerId: string;
  nodeId: string;
  queueMs: number;
  parts: AsyncIterable<RunEventPart>;
  /** Call exactly once when done (finally): cancels an unfinished run and returns its capacity. */
  finish(reason: string): void;
}

export interface PlaygroundRequest {
  model: string;
  prompt: string;
  maxTokens?: number;
}

export type PlaygroundStarter = (request: PlaygroundRequest, signal: AbortSignal) => Promise<PlaygroundRun>;

export interface PlaygroundRouteDeps {
  /** None = disabled (no provider pool). */
  playground?: PlaygroundStarter;
  runLog: Pick<RunLog, 'annotate'>;
  maxPlaygrounds: number;
  maxBodyBytes: number;
  clock: Clock;
}

export interface PlaygroundRoute {
  run(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
  /** Playground runs going now (each released exactly once). */
  readonly count: number;
  /** Aborts every running playground prompt. */
  close(): void;
}

/** Writes one event; resolves when the socket takes more (a slow client holds the run's parts back). */
type Send = <K extends keyof UiPlaygroundEvents>(event: K, data: UiPlaygroundEvents[K]) => Promise<void>;

export function createPlaygroundRoute(deps: PlaygroundRouteDeps): PlaygroundRoute {
  const aborts = new Set<() => void>();
  let running = 0;

  async function readRequest(request: http.IncomingMessage): Promise<PlaygroundRequest> {
    checkMutation(request);
    const body = await readJson(request, deps.maxBodyBytes);
    const model = requiredString(body, 'model');
    const prompt = requiredString(body, 'prompt');
    const maxTokens = body.max_tokens;
    if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) {
      throw new UiError('invalid_request', 'max_tokens must be a positive integer');
    }
    return { model, prompt, maxTokens: maxTokens as number | undefined };
  }

  async function run(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const prompt = await readRequest(request);
    if (!deps.playground) throw new UiError('playground_disabled', 'no provider pool to send prompts to');
    if (running >= deps.maxPlaygrounds) {
      throw new UiError('too_many_playgrounds', 'too many playground prompts running; try again shortly');
    }
    running += 1;
    const abort = new AbortController();
    const onClose = (): void => abort.abort(new Error('the dashboard client went away'));
    const disconnected = disconnectSignal(request.socket);
    disconnected.addEventListener('abort', onClose);
    if (disconnected.aborted) onClose();
    aborts.add(onClose);
    let started: PlaygroundRun | undefined;
    try {
      const startedMs = deps.clock.now();
      started = await deps.playground(prompt, abort.signal);
      deps.runLog.annotate(started.runId, {
        surface: 'ui',
        model: prompt.model,
        provider: started.providerId,
        queue_ms: Math.round(started.queueMs),
      });
      const sink = startSse(response, disconnected);
      const send: Send = (event, data) => sink.write(sseFrame(event, data));
      await send('meta', {
        run_id: started.runId,
        model: prompt.model,
        provider: started.providerId,
        node_id: started.nodeId,
        queue_ms: Math.round(started.queueMs),
      });
      await streamParts(started.parts, send, () => deps.clock.now() - startedMs);
      sink.end();
    } finally {
      started?.finish('the dashboard client went away');
      running -= 1;
      disconnected.removeEventListener('abort', onClose);
      aborts.delete(onClose);
    }
  }

  return {
    run,
    get count() {
      return running;
    },
    close() {
      for (const abort of [...aborts]) abort();
    },
  };
}

/** Sends a run's parts as playground events: text deltas, then `done` with the outcome, timings and usage. */
async function streamParts(
  parts: AsyncIterable<RunEventPart>,
  send: Send,
  elapsedMs: () => number,
): Promise<void> {
  let usage: { prompt: number; completion: number } | undefined;
  for await (const part of parts) {
    switch (part.type) {
      case 'text-delta':
        await send('delta', { text: part.text });
        break;
      case 'usage':
        usage = { prompt: part.usage.promptTokens, completion: part.usage.completionTokens };
        break;
      case 'complete':
      case 'error':
      case 'cancelled': {
        const duration = elapsedMs();
        const backend = part.type === 'cancelled' ? 0 : part.backendMs;
        await send('done', {
          status: part.type === 'complete' ? 'completed' : part.type,
          error: part.type === 'error' ? `${part.code}: ${part.message}` : '',
          duration_ms: duration,
          overhead_ms: backend > 0 ? Math.max(0, duration - backend) : null,
          prompt_tokens: usage?.prompt ?? null,
          completion_tokens: usage?.completion ?? null,
        });
        break;
      }
      case 'start':
      case 'reasoning-delta':
      case 'tool-call':
      case 'progress':
      case 'embeddings':
        break;
      default: {
        const unknown: never = part;
        throw new Error(`unknown run event part ${JSON.stringify(unknown)}`);
      }
    }
  }
}
