// The OpenAI-compatible HTTP surface as an express app: GET /v1/models, POST /v1/chat/completions, POST
// /v1/responses. Handlers only translate: validate the body, resolve the route, hand the run to the service,
// and write the run's parts as JSON or SSE. Every error reaches the single error handler at the end, which is the
// only place statuses and error bodies are decided (openai-error.ts).
//
// Timing headers (agent-contract/outer/openai-compatible-api.md): `x-iop-overhead-ms` is the time spent in the
// edge and node excluding the backend's own time and excluding the provider-queue wait (reported separately as
// `x-iop-queue-ms`). Streams send the edge's share up to the first byte as a header and the full figure as an
// HTTP trailer of the same name.
//
// Hot path: `POST /v1/chat/completions` and `POST /v1/responses` with a plain UTF-8 JSON body are answered by
// the first middleware directly (own body reader, auth check, handler, the same error handler), skipping the
// router's layer chain and body-parser: those were ~35 % of the edge's CPU per request. Other requests (and
// those routes with another content type or encoding) take the ordinary express routes, with identical results.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { EdgeConfig } from '@iop/config';
import type { RunEventPart } from '@iop/wire';
import type { Logger } from '../logging.js';
import { systemClock, type Clock } from '../clock.js';
import type { EdgeService } from '../service/types.js';
import {
  allowsModel,
  createPrincipalResolver,
  type Principal,
  type PrincipalResolver,
} from '../governance/principal.js';
import { authenticate } from './api-key-auth.js';
import { isPlainJsonRequest, readJsonBody } from './json-body.js';
import { BackgroundResponses } from './background-responses.js';
import { noMetrics, type OpenAIMetrics } from './openai-metrics.js';
import { chatCompletionBody, streamChatCompletion, type ChatOutputContext } from './chat-completion.js';
import { chatRunSpec } from './chat-request.js';
import { randomId } from './ids.js';
import { invalidRequest, mapOpenAIError, modelNotFound, OpenAIHttpError } from './openai-error.js';
import { validateChatRequest, validateResponsesRequest } from './request-validator.js';
import { responsesRunSpec } from './responses-request.js';
import { responsesBody, streamResponse, type ResponsesOutputContext } from './responses-output.js';
import { createRouteResolver, type ResolvedRoute } from './route-resolver.js';
import { createRunStarter, type StartedRun } from './run-starter.js';
import { bufferRun, collectRun, type CollectedRun, type OutputOptions } from './run-output.js';
import type { RunSpec } from './run-spec.js';
import { SseSink } from './sse-sink.js';
import { MAX_HTTP_BODY_BYTES } from '../http/http-server.js';
import type { PeerCalls } from '../cluster/peer-calls.js';

export interface OpenAIAppOptions {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  metrics?: OpenAIMetrics;
  /** Limits of the background-response store (`background: true`). */
  background?: { maxEntries?: number; ttlMs?: number };
  /**
   * The keys in force, asked on every request (live key changes); default: `openai.api_keys` of `config`.
   */
  principals?: () => PrincipalResolver;
  /** Cluster mode: a background response this edge does not hold is asked of the other edges (and answered here). */
  peers?: PeerCalls;
}

/** The peer-call topic of background-response look-ups (cluster mode), and its payload. */
export const OPENAI_RESPONSES_TOPIC = 'openai-responses';
interface ResponseCall {
  method: 'get' | 'cancel';
  id: string;
  owner: string;
}

/** Largest accepted request body: what one frame to the node can carry (larger bodies get 413 at once). */
export const MAX_BODY_BYTES = MAX_HTTP_BODY_BYTES;

const OVERHEAD_HEADER = 'x-iop-overhead-ms';
const BACKGROUND_KEY = 'iopBackgroundResponses';
const STOP_PEERS_KEY = 'iopStopPeerCalls';

/** Cancels the app's running background responses (surface shutdown). */
export function closeOpenAIApp(app: express.Express): void {
  (app.locals[STOP_PEERS_KEY] as (() => void) | undefined)?.();
  const background = app.locals[BACKGROUND_KEY] as BackgroundResponses | undefined;
  background?.close();
}

/** Metric route labels: only known routes, so unknown paths cannot grow the label set. */
const ROUTE_LABELS = new Map([
  ['GET /v1/responses/:id', '/v1/responses/:id'],
  ['POST /v1/responses/:id/cancel', '/v1/responses/:id/cancel'],
  ['GET /v1/models', '/v1/models'],
  ['GET /v1/models/*model', '/v1/models/:model'],
  ['POST /v1/chat/completions', '/v1/chat/completions'],
  ['POST /v1/responses', '/v1/responses'],
]);

/** The routes the first middleware serves itself (path → metric label), POST only. */
const HOT_ROUTES = new Map([
  ['/v1/chat/completions', '/v1/chat/completions'],
  ['/v1/responses', '/v1/responses'],
]);

interface Timing {
  arrivedAt: number;
  /** The request's principal once authenticated; undefined = anonymous. */
  principal?: Principal;
}

export function createOpenAIApp(options: OpenAIAppOptions): express.Express {
  const { config, service, logger } = options;
  const clock = options.clock ?? systemClock;
  const metrics = options.metrics ?? noMetrics;
  const openai = config.openai;
  const resolver = createRouteResolver(openai, service.models);
  const runs = createRunStarter({
    service,
    logger,
    sessionId: openai.session_id || 'openai',
    timeoutMs: openai.timeout_sec * 1000,
  });
  const catalogueCreated = Math.floor(clock.now() / 1000);
  const background = new BackgroundResponses({ runs, clock, logger, ...options.background });

  const app = express();
  app.locals[BACKGROUND_KEY] = background;
  // Other edges ask for the background responses this edge holds; one it does not hold is not its answer.
  app.locals[STOP_PEERS_KEY] = options.peers?.serve(OPENAI_RESPONSES_TOPIC, (payload) => {
    const call = payload as ResponseCall;
    try {
      const body =
        call.method === 'get' ? background.get(call.id, call.owner) : background.cancel(call.id, call.owner);
      return Promise.resolve({ value: body });
    } catch (error) {
      if (error instanceof OpenAIHttpError && error.status === 404) return Promise.resolve(undefined);
      throw error;
    }
  });
  /** This edge's background response, else (cluster mode) the first other edge that holds it, else 404. */
  const backgroundBody = async (method: 'get' | 'cancel', id: string, owner: string | undefined) => {
    try {
      return method === 'get' ? background.get(id, owner) : background.cancel(id, owner);
    } catch (error) {
      if (!options.peers || !(error instanceof OpenAIHttpError) || error.status !== 404) throw error;
      const answer = await options.peers.ask(OPENAI_RESPONSES_TOPIC, { method, id, owner: owner ?? '' });
      if (!answer || 'error' in answer) throw error;
      return answer.value as Record<string, unknown>;
    }
  };
  app.disable('x-powered-by');
  app.set('etag', false);
  const fixedPrincipals = createPrincipalResolver({ keys: openai.api_keys });
  const principals = options.principals ?? (() => fixedPrincipals);
  /** Sets the response's principal; returns the 401 to answer with when the key is missing or wrong. */
  const authorize = (request: Request, response: Response): OpenAIHttpError | undefined => {
    const result = authenticate(principals(), request.headers.authorization);
    if (result instanceof OpenAIHttpError) return result;
    (response.locals as Timing).principal = result;
    return undefined;
  };
  app.use((request, response, next) => {
    const arrivedAt = performance.now();
    (response.locals as Timing).arrivedAt = arrivedAt;
    const hot = request.method === 'POST' ? HOT_ROUTES.get(request.url) : undefined;
    const fast = hot !== undefined && isPlainJsonRequest(request);
    response.once('close', () => {
      const route = fast
        ? hot
        : ROUTE_LABELS.get(
            `${request.method} ${request.route ? String((request.route as { path: unknown }).path) : ''}`,
          );
      metrics.requestFinished(route ?? 'other', response.statusCode, (performance.now() - arrivedAt) / 1000);
    });
    if (!fast) {
      next();
      return;
    }
    const denied = authorize(request, response);
    if (denied) {
      request.resume();
      handleError(denied, request, response);
      return;
    }
    const handle = hot === '/v1/chat/completions' ? chatCompletions : responses;
    readJsonBody(request, MAX_BODY_BYTES)
      .then((body) => handle(body, response))
      .catch((error: unknown) => handleError(error, request, response));
  });
  app.use((request, response, next) => next(authorize(request, response)));
  const json = express.json({ limit: MAX_BODY_BYTES, type: ['application/json', 'application/*+json'] });

  app.get('/v1/models', (_request, response) => {
    setOverhead(response);
    response.json({
      object: 'list',
      data: visibleModels(response).map((id) => modelEntry(id, catalogueCreated)),
    });
  });

  // Model ids may contain '/' (e.g. org/name), so the id is the rest of the path.
  app.get('/v1/models/*model', (request, response) => {
    const segments = (request.params as Record<string, string | string[]>)['model'] ?? [];
    const model = Array.isArray(segments) ? segments.join('/') : segments;
    if (!visibleModels(response).includes(model)) throw modelNotFound(model);
    setOverhead(response);
    response.json(modelEntry(model, catalogueCreated));
  });

  app.post('/v1/chat/completions', json, (request, response) => chatCompletions(request.body, response));
  app.post('/v1/responses', json, (request, response) => responses(request.body, response));

  /** The catalogue as the request's key sees it: models outside its allow-list do not exist for it. */
  function visibleModels(response: Response): string[] {
    const principal = (response.locals as Timing).principal;
    const catalogue = resolver.catalogue();
    return principal ? catalogue.filter((model) => allowsModel(principal, model)) : catalogue;
  }

  /** Who is asking and in which trace: the key's principal and the request's `traceparent` header. */
  function callerOf(response: Response): Pick<RunSpec, 'principal' | 'traceparent'> {
    const traceparent = response.req.headers.traceparent;
    return {
      principal: (response.locals as Timing).principal,
      ...(typeof traceparent === 'string' && traceparent !== '' ? { traceparent } : {}),
    };
  }

  /** Resolves the model for the request's key (404 outside its allow-list, as if it did not exist). */
  function resolveFor(response: Response, model: string): ResolvedRoute {
    const principal = (response.locals as Timing).principal;
    if (principal && !allowsModel(principal, model)) throw modelNotFound(model);
    return resolver.resolve(model);
  }

  async function chatCompletions(requestBody: unknown, response: Response): Promise<void> {
    const body = validateChatRequest(requestBody);
    const route = resolveFor(response, body.model);
    const spec = { ...chatRunSpec(body), ...callerOf(response) };
    requireWorkspace(route, spec);
    const output = outputOptions(spec);
    const context: ChatOutputContext = {
      id: `chatcmpl-${randomId()}`,
      created: Math.floor(clock.now() / 1000),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
      output,
    };
    await serveRun(response, route, spec, body.stream === true, {
      json: (run) => chatCompletionBody(context, run),
      stream: (parts, sink) => streamChatCompletion(parts, sink, context),
    });
  }

  async function responses(requestBody: unknown, response: Response): Promise<void> {
    const body = validateResponsesRequest(requestBody);
    if (body.background === true && body.stream === true) {
      throw invalidRequest(
        "'background' and 'stream' cannot be combined: poll GET /v1/responses/{id} instead",
        'stream',
        'unsupported_field',
      );
    }
    const route = resolveFor(response, body.model);
    const spec = { ...responsesRunSpec(body), ...callerOf(response) };
    requireWorkspace(route, spec);
    const context: ResponsesOutputContext = {
      id: `resp_${randomId()}`,
      createdAt: Math.floor(clock.now() / 1000),
      model: body.model,
      request: body,
      output: outputOptions(spec),
    };
    if (body.background === true) {
      const queued = background.start(context, route, spec, outputOptions(spec));
      setOverhead(response);
      response.json(queued);
      return;
    }
    await serveRun(response, route, spec, body.stream === true, {
      json: (run) => responsesBody(context, run),
      stream: (parts, sink) => streamResponse(parts, sink, context),
    });
  }

  app.get('/v1/responses/:id', async (request, response) => {
    const owner = (response.locals as Timing).principal?.id;
    const body = await backgroundBody('get', String(request.params['id']), owner);
    setOverhead(response);
    response.json(body);
  });

  app.post('/v1/responses/:id/cancel', async (request, response) => {
    const owner = (response.locals as Timing).principal?.id;
    const body = await backgroundBody('cancel', String(request.params['id']), owner);
    setOverhead(response);
    response.json(body);
  });

  app.use((request, _response, next) => {
    next(
      new OpenAIHttpError(
        404,
        'invalid_request_error',
        'unknown_url',
        `Unknown request URL: ${request.method} ${request.path}`,
      ),
    );
  });

  // The one error handler: every failure of every route ends here (the hot path calls it directly).
  app.use((error: unknown, request: Request, response: Response, _next: NextFunction) =>
    handleError(error, request, response),
  );

  return app;

  function handleError(error: unknown, request: Request, response: Response): void {
    const mapped = mapOpenAIError(error);
    if (response.destroyed) {
      logger.debug({ code: mapped.body.error.code, path: request.path }, 'openai client went away');
      return;
    }
    if (mapped.status >= 500) {
      logger.warn(
        { err: error, status: mapped.status, code: mapped.body.error.code, path: request.path },
        'openai request failed',
      );
    } else {
      logger.debug(
        { status: mapped.status, code: mapped.body.error.code, path: request.path },
        'openai request rejected',
      );
    }
    if (response.headersSent) {
      if (!response.writableEnded) response.end();
      return;
    }
    for (const [name, value] of Object.entries(mapped.headers)) response.setHeader(name, value);
    setOverhead(response);
    response.status(mapped.status).json(mapped.body);
  }

  function outputOptions(spec: RunSpec): OutputOptions {
    return { includeReasoning: spec.includeReasoning, inlineReasoning: !openai.strict_output };
  }

  async function serveRun(
    response: Response,
    route: ResolvedRoute,
    spec: RunSpec,
    stream: boolean,
    writers: {
      json: (run: CollectedRun) => Record<string, unknown>;
      stream: (parts: AsyncIterable<RunEventPart>, sink: SseSink) => Promise<void>;
    },
  ): Promise<void> {
    const disconnect = abortOnDisconnect(response);
    try {
      const run = await runs.start(route, spec, disconnect.signal);
      try {
        setRunHeaders(response, run);
        if (!stream) {
          const collected = await collectRun(run.parts(), outputOptions(spec));
          metrics.overhead(overheadOf(response, run, true) / 1000);
          setOverhead(response, run);
          response.json(writers.json(collected));
          return;
        }
        const buffered = openai.strict_stream_buffer;
        const parts = buffered ? replay(await bufferRun(run.parts())) : run.parts();
        const sink = new SseSink(
          response,
          disconnect.signal,
          () => {
            metrics.firstToken((performance.now() - (response.locals as Timing).arrivedAt) / 1000);
            return { [OVERHEAD_HEADER]: formatMs(overheadOf(response, run, buffered)) };
          },
          buffered ? [] : [OVERHEAD_HEADER],
        );
        await writers.stream(parts, sink);
        const overhead = overheadOf(response, run, true);
        if (run.handle.overheadMs() !== undefined) metrics.overhead(overhead / 1000);
        sink.end(buffered ? {} : { [OVERHEAD_HEADER]: formatMs(overhead) });
      } finally {
        run.finish('client disconnected');
      }
    } finally {
      disconnect.dispose();
    }
  }
}

function requireWorkspace(route: ResolvedRoute, spec: RunSpec): void {
  if (route.workspaceRequired && !spec.workspace) {
    throw invalidRequest(
      `The model '${route.model}' runs a CLI agent and requires 'metadata.workspace'`,
      'metadata.workspace',
      'workspace_required',
    );
  }
}

function modelEntry(id: string, created: number) {
  return { id, object: 'model', created, owned_by: 'iop' };
}

function setRunHeaders(response: Response, run: StartedRun): void {
  response.setHeader('x-iop-run-id', run.handle.runId);
  response.setHeader('x-iop-queue-ms', formatMs(run.handle.queueMs));
  if (run.handle.providerId) response.setHeader('x-iop-provider', run.handle.providerId);
}

/** Edge time before the run was submitted (excluding queue wait), plus the run's own overhead when complete. */
function overheadOf(response: Response, run: StartedRun, complete: boolean): number {
  const arrivedAt = (response.locals as Timing).arrivedAt;
  const beforeSubmit = Math.max(0, run.handle.submittedAt - arrivedAt - run.handle.queueMs);
  const runOverhead = complete ? (run.handle.overheadMs() ?? 0) : 0;
  return beforeSubmit + runOverhead;
}

function setOverhead(response: Response, run?: StartedRun): void {
  const value = run
    ? overheadOf(response, run, true)
    : performance.now() - ((response.locals as Partial<Timing>).arrivedAt ?? performance.now());
  response.setHeader(OVERHEAD_HEADER, formatMs(value));
}

function formatMs(value: number): string {
  return value.toFixed(2);
}

/** A buffered run as the async iterable the stream writers take. */
function replay(parts: RunEventPart[]): AsyncIterable<RunEventPart> {
  return {
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        next: () =>
          Promise.resolve(
            index < parts.length
              ? { value: parts[index++], done: false }
              : { value: undefined, done: true as const },
          ),
      };
    },
  };
}

/** Aborts when the client goes away before the response finished (the response closes unfinished). */
function abortOnDisconnect(response: Response): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!response.writableFinished) controller.abort(new Error('client disconnected'));
  };
  response.on('close', onClose);
  return {
    signal: controller.signal,
    dispose: () => response.off('close', onClose),
  };
}
