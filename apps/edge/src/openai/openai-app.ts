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
// the surface's node:http request listener itself (own body reader, auth check, handler, the same error
// handler), before express sees the request: express's request/response setup, router and body-parser were
// the largest share of the edge's CPU per request. Other requests (and those routes with another content type
// or encoding) are handed to the express app, with identical results. Every JSON answer of both paths is
// written by one function (`sendJson`).
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { DEFAULTS, type EdgeConfig } from '@iop/config';
import type { RunEventPart } from '@iop/wire';
import type { Logger } from '../logging.js';
import { systemClock, type Clock } from '../clock.js';
import type { EdgeService, ParentRef } from '../service/types.js';
import { bearerSecret, type ModelCallAuthenticator } from '../service/model-call-auth.js';
import { modelCallOf, type ModelCallContext } from '../http/model-call-socket.js';
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
import { chatRequestedRun } from './chat-request.js';
import {
  completionBody,
  completionsRequestedRun,
  streamCompletion,
  validateCompletionsRequest,
  type CompletionOutputContext,
} from './completions.js';
import {
  collectEmbeddings,
  embeddingsBody,
  embeddingsRequestedRun,
  validateEmbeddingsRequest,
} from './embeddings.js';
import { randomId } from './ids.js';
import { invalidRequest, mapOpenAIError, modelNotFound, OpenAIHttpError } from './openai-error.js';
import { validateChatRequest, validateResponsesRequest } from './request-validator.js';
import { planRequestFields, type RequestEndpoint } from './request-fields.js';
import { responsesRequestedRun } from './responses-request.js';
import { responsesBody, streamResponse, type ResponsesOutputContext } from './responses-output.js';
import { createRouteResolver, type ResolvedRoute } from './route-resolver.js';
import { createRunStarter, type StartedRun } from './run-starter.js';
import { bufferRun, type CollectedRun, type OutputOptions } from './run-output.js';
import {
  checkImageUrlCount,
  checkImageUrls,
  hasImageUrls,
  requestAffinityKey,
  type RequestedRun,
} from './requested-run.js';
import { SseSink } from './sse-sink.js';
import { MAX_HTTP_BODY_BYTES } from '../http/http-server.js';
import type { HttpMount } from '../http/http-mount.js';

export interface OpenAIAppOptions {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  metrics?: OpenAIMetrics;
  /**
   * The keys in force, asked on every request (live key changes); default: `openai.api_keys` of `config`.
   */
  principals?: () => PrincipalResolver;
  /** Routes of other APIs served on this listener (the Anthropic Messages API), offered every request first. */
  mounts?: readonly HttpMount[];
  /** Authenticates agents' model calls (run secrets); none = a model call is refused with 401. */
  modelCalls?: ModelCallAuthenticator;
}

/** Largest accepted request body: what one frame to the node can carry (larger bodies get 413 at once). */
export const MAX_BODY_BYTES = MAX_HTTP_BODY_BYTES;

const OVERHEAD_HEADER = 'x-iop-overhead-ms';
/** Names the request fields a `drop_unsupported` model dropped (comma-separated). */
const DROPPED_HEADER = 'x-iop-dropped-params';
/** Dispatches the run took (2 or more after a retry before the first output). */
const ATTEMPTS_HEADER = 'x-iop-attempts';
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The OpenAI surface as a node:http request listener (give it to `http.createServer`): serves the hot routes
 * itself and hands everything else to its express app.
 */
export type OpenAIApp = RequestListener & { readonly [CLOSE]: () => void };
const CLOSE = Symbol('closeOpenAIApp');

/** Cancels the app's running background responses (surface shutdown). */
export function closeOpenAIApp(app: OpenAIApp): void {
  app[CLOSE]();
}

/** Metric route labels: only known routes, so unknown paths cannot grow the label set. */
const ROUTE_LABELS = new Map([
  ['GET /v1/responses/:id', '/v1/responses/:id'],
  ['POST /v1/responses/:id/cancel', '/v1/responses/:id/cancel'],
  ['GET /v1/models', '/v1/models'],
  ['GET /v1/models/*model', '/v1/models/:model'],
  ['POST /v1/chat/completions', '/v1/chat/completions'],
  ['POST /v1/responses', '/v1/responses'],
  ['POST /v1/embeddings', '/v1/embeddings'],
  ['POST /v1/completions', '/v1/completions'],
]);

/** The routes the first middleware serves itself (path → metric label), POST only. */
const HOT_ROUTES = new Map([
  ['/v1/chat/completions', '/v1/chat/completions'],
  ['/v1/responses', '/v1/responses'],
]);

/** One request as the handlers see it, whichever path serves it (express keeps it in `response.locals`). */
interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** performance.now() when the request arrived. */
  readonly arrivedAt: number;
  /** The request's principal once authenticated; undefined = anonymous. */
  principal?: Principal | undefined;
  /** Set for an agent's model call: the run it is a child of. */
  parent?: ParentRef | undefined;
}

export function createOpenAIApp(options: OpenAIAppOptions): OpenAIApp {
  const { config, service, logger } = options;
  const clock = options.clock ?? systemClock;
  const metrics = options.metrics ?? noMetrics;
  const openai = config.openai;
  const resolver = createRouteResolver(openai, service.models, config.nodes);
  const runs = createRunStarter({
    service,
    logger,
    sessionId: openai.session_id || 'openai',
    timeoutMs: openai.timeout_sec * 1000,
  });
  const catalogueCreated = Math.floor(clock.now() / 1000);
  // Background responses are held in the service's run registry (looked up on the other edges in cluster mode).
  const background = new BackgroundResponses({ runs, registry: service.runRegistry, logger });
  const backgroundBody = (method: 'get' | 'cancel', id: string, owner: string | undefined) =>
    method === 'get' ? background.get(id, owner) : background.cancel(id, owner);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const fixedPrincipals = createPrincipalResolver({ keys: openai.api_keys });
  const principals = options.principals ?? (() => fixedPrincipals);
  /** Sets the exchange's principal; returns the 401 to answer with when the key is missing or wrong. */
  const authorize = (exchange: Exchange): OpenAIHttpError | undefined => {
    const call = modelCallOf(exchange.request.socket);
    if (call) return authorizeModelCall(exchange, call);
    const result = authenticate(principals(), exchange.request.headers.authorization);
    if (result instanceof OpenAIHttpError) return result;
    exchange.principal = result;
    return undefined;
  };
  /** An agent's model call: its run's secret, never an API key (service/model-call-auth.ts). */
  const authorizeModelCall = (exchange: Exchange, call: ModelCallContext): OpenAIHttpError | undefined => {
    const secret = bearerSecret(exchange.request.headers.authorization);
    const result = options.modelCalls?.authenticate(call, secret) ?? { kind: 'invalid' as const };
    if (result.kind === 'accepted') {
      exchange.principal = result.principal;
      exchange.parent = result.parent;
      return undefined;
    }
    return new OpenAIHttpError(
      401,
      'authentication_error',
      'invalid_api_key',
      result.kind === 'missing'
        ? "Missing run key: send 'Authorization: Bearer <the run's model_api_key>'"
        : 'Incorrect run key, or its run has ended',
    );
  };

  const mounts = options.mounts ?? [];
  /** The surface's request listener: mounted routes first, then the hot routes here, the rest through express. */
  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    for (const mount of mounts) if (mount.handle(request, response)) return;
    const exchange: Exchange = { request, response, arrivedAt: performance.now() };
    const hot = request.method === 'POST' ? HOT_ROUTES.get(request.url ?? '') : undefined;
    const fast = hot !== undefined && isPlainJsonRequest(request);
    // A response closes once (`on`: no once-wrapper per request).
    response.on('close', () => {
      const route = fast ? hot : expressRouteLabel(response);
      metrics.requestFinished(
        route ?? 'other',
        response.statusCode,
        (performance.now() - exchange.arrivedAt) / 1000,
      );
    });
    if (!fast) {
      (response as ServerResponse & { locals?: Record<string, unknown> }).locals = { exchange };
      app(request, response);
      return;
    }
    const denied = authorize(exchange);
    if (denied) {
      request.resume();
      handleError(denied, exchange);
      return;
    }
    const handle = hot === '/v1/chat/completions' ? chatCompletions : responses;
    readJsonBody(request, MAX_BODY_BYTES)
      .then((body) => handle(body, exchange))
      .catch((error: unknown) => handleError(error, exchange));
  };
  app.use((_request, response, next) => next(authorize(exchangeOf(response))));
  const json = express.json({ limit: MAX_BODY_BYTES, type: ['application/json', 'application/*+json'] });

  app.get('/v1/models', (_request, response) => {
    const exchange = exchangeOf(response);
    sendJson(exchange, 200, {
      object: 'list',
      data: visibleModels(exchange).map((id) => modelEntry(id, catalogueCreated)),
    });
  });

  // Model ids may contain '/' (e.g. org/name), so the id is the rest of the path.
  app.get('/v1/models/*model', (request, response) => {
    const segments = (request.params as Record<string, string | string[]>)['model'] ?? [];
    const model = Array.isArray(segments) ? segments.join('/') : segments;
    const exchange = exchangeOf(response);
    if (!visibleModels(exchange).includes(model)) throw modelNotFound(model);
    sendJson(exchange, 200, modelEntry(model, catalogueCreated));
  });

  app.post('/v1/chat/completions', json, (request, response) =>
    chatCompletions(request.body, exchangeOf(response)),
  );
  app.post('/v1/responses', json, (request, response) => responses(request.body, exchangeOf(response)));
  app.post('/v1/embeddings', json, (request, response) => embeddings(request.body, exchangeOf(response)));
  app.post('/v1/completions', json, (request, response) => completions(request.body, exchangeOf(response)));

  /** Legacy text completion of a raw prompt through the same admission as chat; CLI agents cannot (400). */
  function completions(requestBody: unknown, exchange: Exchange): Promise<void> {
    const body = validateCompletionsRequest(requestBody);
    const route = resolveFor(exchange, body.model);
    if (resolver.backends(route).includes('cli')) {
      throw invalidRequest(
        `The model '${route.model}' runs a CLI agent, which cannot complete a raw prompt`,
        'model',
        'unsupported_model',
      );
    }
    const fields = planFields('completions', body, route);
    const spec = withCaller(Object.assign(completionsRequestedRun(body), fields), exchange, requestBody);
    const context: CompletionOutputContext = {
      id: `cmpl-${randomId()}`,
      created: Math.floor(clock.now() / 1000),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
    };
    return serveRun(exchange, route, spec, body.stream === true, {
      // A text completion is text only: reasoning a backend reports is neither returned nor inlined.
      output: { includeReasoning: false, inlineReasoning: false },
      json: (run) => completionBody(context, run),
      stream: (parts, sink) => streamCompletion(parts, sink, context),
    });
  }

  /** Embedding vectors through the same admission as chat; CLI agents cannot embed (400). */
  async function embeddings(requestBody: unknown, exchange: Exchange): Promise<void> {
    const body = validateEmbeddingsRequest(requestBody);
    const route = resolveFor(exchange, body.model);
    if (resolver.backends(route).includes('cli')) {
      throw invalidRequest(
        `The model '${route.model}' runs a CLI agent, which cannot compute embeddings`,
        'model',
        'unsupported_model',
      );
    }
    const fields = planFields('embeddings', body, route);
    const spec = withCaller(Object.assign(embeddingsRequestedRun(body), fields), exchange);
    const response = exchange.response;
    if (spec.droppedParams) response.setHeader(DROPPED_HEADER, spec.droppedParams.join(','));
    const run = await runs.start(route, spec, disconnectSignal(exchange.request.socket));
    try {
      let collected;
      try {
        collected = await collectEmbeddings(run.parts(), spec.embedding?.inputs.length ?? 0);
      } catch (error) {
        setRunHeaders(response, run);
        throw error;
      }
      const overhead = overheadOf(exchange, run, true);
      metrics.overhead(overhead / 1000);
      const answer = embeddingsBody(body.model, collected, body.encoding_format ?? 'float');
      sendJson(exchange, 200, answer, runHeaders(run, overhead));
    } finally {
      run.finish('client disconnected');
    }
  }

  /** The catalogue as the request's key sees it: models outside its allow-list do not exist for it. */
  function visibleModels(exchange: Exchange): string[] {
    const principal = exchange.principal;
    const catalogue = resolver.catalogue();
    return principal ? catalogue.filter((model) => allowsModel(principal, model)) : catalogue;
  }

  /**
   * Adds who is asking, in which trace and in which conversation: the key's principal, the request's
   * `traceparent` header, and its affinity key (`x-session-id`, else the body's `user`).
   */
  function withCaller(spec: RequestedRun, exchange: Exchange, requestBody?: unknown): RequestedRun {
    // `spec` was just built for this request: filled in place rather than copied.
    spec.principal = exchange.principal;
    if (exchange.parent) spec.parent = exchange.parent;
    const traceparent = exchange.request.headers.traceparent;
    if (typeof traceparent === 'string' && traceparent !== '') spec.traceparent = traceparent;
    const user =
      typeof requestBody === 'object' && requestBody !== null
        ? (requestBody as Record<string, unknown>)['user']
        : undefined;
    const affinityKey = requestAffinityKey(exchange.request.headers['x-session-id'], user);
    if (affinityKey !== undefined) spec.affinityKey = affinityKey;
    return spec;
  }

  /**
   * No silent drop: every field of the body is taken, forwarded or refused for the route's backends (dropped
   * fields are removed from the body before the spec is built from it). Returns what the spec must carry.
   */
  function planFields(
    endpoint: RequestEndpoint,
    body: object,
    route: ResolvedRoute,
  ): Pick<RequestedRun, 'extraBodyJson' | 'droppedParams'> {
    const plan = planRequestFields(body as Record<string, unknown>, {
      endpoint,
      model: route.model,
      backends: resolver.backends(route),
      dropUnsupported: route.kind === 'pool' && route.modelConfig.drop_unsupported,
    });
    return {
      extraBodyJson: plan.extraBody ? JSON.stringify(plan.extraBody) : undefined,
      droppedParams: plan.dropped.length > 0 ? plan.dropped : undefined,
    };
  }

  /**
   * Remote images: at most the model's `image_limits.max_urls` (400), refused for backends that cannot take them
   * (400), fetched by the node when the model allows, within its `image_limits.max_total_bytes`.
   */
  function withImageUrls(spec: RequestedRun, route: ResolvedRoute): RequestedRun {
    if (!hasImageUrls(spec)) return spec;
    const limits =
      route.kind === 'pool'
        ? route.modelConfig.image_limits
        : { max_urls: DEFAULTS.image_max_urls, max_total_bytes: DEFAULTS.image_max_total_bytes };
    checkImageUrlCount(route.model, spec, limits.max_urls);
    const fetchEnabled = route.kind === 'pool' && route.modelConfig.fetch_image_urls;
    if (checkImageUrls(route.model, resolver.backends(route), fetchEnabled)) {
      spec.fetchImageUrls = true;
      spec.imageFetchMaxTotalBytes = limits.max_total_bytes;
    }
    return spec;
  }

  /** Resolves the model for the request's key (404 outside its allow-list, as if it did not exist). */
  function resolveFor(exchange: Exchange, model: string): ResolvedRoute {
    const principal = exchange.principal;
    if (principal && !allowsModel(principal, model)) throw modelNotFound(model);
    return resolver.resolve(model);
  }

  // Not async: its one await was the last statement, so serveRun's promise is returned as is (a throw before it
  // reaches the error handler either way: the hot path calls it in a then-callback, express catches throws).
  function chatCompletions(requestBody: unknown, exchange: Exchange): Promise<void> {
    const body = validateChatRequest(requestBody);
    const route = resolveFor(exchange, body.model);
    const fields = planFields('chat', body, route);
    const spec = withImageUrls(
      withCaller(Object.assign(chatRequestedRun(body), fields), exchange, requestBody),
      route,
    );
    requireWorkspace(route, spec);
    const output = outputOptions(spec);
    const context: ChatOutputContext = {
      id: `chatcmpl-${randomId()}`,
      created: Math.floor(clock.now() / 1000),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
      output,
    };
    return serveRun(exchange, route, spec, body.stream === true, {
      json: (run) => chatCompletionBody(context, run),
      stream: (parts, sink) => streamChatCompletion(parts, sink, context),
    });
  }

  async function responses(requestBody: unknown, exchange: Exchange): Promise<void> {
    const body = validateResponsesRequest(requestBody);
    if (body.background === true && body.stream === true) {
      throw invalidRequest(
        "'background' and 'stream' cannot be combined: poll GET /v1/responses/{id} instead",
        'stream',
        'unsupported_field',
      );
    }
    const route = resolveFor(exchange, body.model);
    const fields = planFields('responses', body, route);
    const spec = withImageUrls(
      withCaller(Object.assign(responsesRequestedRun(body), fields), exchange, requestBody),
      route,
    );
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
      if (spec.droppedParams) exchange.response.setHeader(DROPPED_HEADER, spec.droppedParams.join(','));
      sendJson(exchange, 200, queued);
      return;
    }
    await serveRun(exchange, route, spec, body.stream === true, {
      json: (run) => responsesBody(context, run),
      stream: (parts, sink) => streamResponse(parts, sink, context),
    });
  }

  app.get('/v1/responses/:id', async (request, response) => {
    const exchange = exchangeOf(response);
    const body = await backgroundBody('get', String(request.params['id']), exchange.principal?.id);
    sendJson(exchange, 200, body);
  });

  app.post('/v1/responses/:id/cancel', async (request, response) => {
    const exchange = exchangeOf(response);
    const body = await backgroundBody('cancel', String(request.params['id']), exchange.principal?.id);
    sendJson(exchange, 200, body);
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
  app.use((error: unknown, _request: Request, response: Response, _next: NextFunction) =>
    handleError(error, exchangeOf(response)),
  );

  return Object.assign(listener, {
    [CLOSE]: () => {
      background.close();
    },
  });

  function handleError(error: unknown, exchange: Exchange): void {
    const mapped = mapOpenAIError(error);
    const { request, response } = exchange;
    const path = (request.url ?? '').split('?', 1)[0];
    if (response.destroyed) {
      logger.debug({ code: mapped.body.error.code, path }, 'openai client went away');
      return;
    }
    if (mapped.status >= 500) {
      logger.warn(
        { err: error, status: mapped.status, code: mapped.body.error.code, path },
        'openai request failed',
      );
    } else {
      logger.debug({ status: mapped.status, code: mapped.body.error.code, path }, 'openai request rejected');
    }
    if (response.headersSent) {
      if (!response.writableEnded) response.end();
      return;
    }
    for (const [name, value] of Object.entries(mapped.headers)) response.setHeader(name, value);
    sendJson(exchange, mapped.status, mapped.body);
  }

  function outputOptions(spec: RequestedRun): OutputOptions {
    return { includeReasoning: spec.includeReasoning, inlineReasoning: !openai.strict_output };
  }

  async function serveRun(
    exchange: Exchange,
    route: ResolvedRoute,
    spec: RequestedRun,
    stream: boolean,
    writers: {
      /** How reasoning shows in a collected answer; default from the spec and `strict_output`. */
      output?: OutputOptions;
      json: (run: CollectedRun) => Record<string, unknown>;
      stream: (parts: AsyncIterable<RunEventPart>, sink: SseSink) => Promise<void>;
    },
  ): Promise<void> {
    const response = exchange.response;
    // Set before the run: an error answer names what was dropped too.
    if (spec.droppedParams) response.setHeader(DROPPED_HEADER, spec.droppedParams.join(','));
    const signal = disconnectSignal(exchange.request.socket);
    // A non-streaming answer is written once the run ended: the node may fetch it whole from the backend.
    spec.collect = !stream;
    const run = await runs.start(route, spec, signal);
    try {
      if (!stream) {
        let collected: CollectedRun;
        try {
          collected = await run.collect(writers.output ?? outputOptions(spec));
        } catch (error) {
          setRunHeaders(response, run);
          throw error;
        }
        const overhead = overheadOf(exchange, run, true);
        metrics.overhead(overhead / 1000);
        sendJson(exchange, 200, writers.json(collected), runHeaders(run, overhead));
        return;
      }
      setRunHeaders(response, run);
      const buffered = openai.strict_stream_buffer;
      const parts = buffered ? replay(await bufferRun(run.parts())) : run.parts();
      const sink = new SseSink(
        response,
        signal,
        () => {
          metrics.firstToken((performance.now() - exchange.arrivedAt) / 1000);
          // The head leaves with the first output: the attempt that produced it is the one to name.
          setRunHeaders(response, run);
          return { [OVERHEAD_HEADER]: formatMs(overheadOf(exchange, run, buffered)) };
        },
        buffered ? [] : [OVERHEAD_HEADER],
      );
      await writers.stream(parts, sink);
      const overhead = overheadOf(exchange, run, true);
      if (run.handle.overheadMs() !== undefined) metrics.overhead(overhead / 1000);
      sink.end(buffered ? {} : { [OVERHEAD_HEADER]: formatMs(overhead) });
    } finally {
      run.finish('client disconnected');
    }
  }
}

const DISCONNECT = Symbol('iopDisconnect');

/**
 * The run-cancel signal of a client connection, aborted when the connection closes. One per connection, not per
 * request (an AbortController costs ~2 µs to make): a connection closes between responses only when idle, with
 * no run attached, so an abort always means a client that left before its response finished — the same cases
 * as aborting when the response closes unfinished. Every run removes its listeners when it ends, so a
 * keep-alive connection does not accumulate them.
 */
export function disconnectSignal(socket: Socket): AbortSignal {
  const holder = socket as Socket & { [DISCONNECT]?: AbortController };
  let controller = holder[DISCONNECT];
  if (!controller) {
    const created = new AbortController();
    controller = created;
    holder[DISCONNECT] = created;
    socket.once('close', () => created.abort(new Error('client disconnected')));
  }
  return controller.signal;
}

/** The exchange express carries for the listener (set before the app is called). */
function exchangeOf(response: Response): Exchange {
  return (response.locals as { exchange: Exchange }).exchange;
}

/** The metric label of the express route that answered, if a known one did. */
function expressRouteLabel(response: ServerResponse): string | undefined {
  const request = response.req as Partial<Request>;
  const route = request.route as { path: unknown } | undefined;
  return ROUTE_LABELS.get(`${request.method ?? ''} ${route ? String(route.path) : ''}`);
}

/**
 * Writes a whole JSON answer: status, the headers set so far plus `headers` (flat name/value list), the
 * content type and length, `x-iop-overhead-ms` unless given, and the body.
 */
function sendJson(exchange: Exchange, status: number, body: unknown, headers?: (string | number)[]): void {
  const text = JSON.stringify(body);
  const response = exchange.response;
  const list: (string | number)[] = headers ?? [
    OVERHEAD_HEADER,
    formatMs(performance.now() - exchange.arrivedAt),
  ];
  list.push('content-type', JSON_CONTENT_TYPE, 'content-length', Buffer.byteLength(text));
  response.writeHead(status, list as string[]);
  // end(body), not write() + end(): write() corks the socket and schedules an uncork on a tick of its own.
  response.end(text);
}

function requireWorkspace(route: ResolvedRoute, spec: RequestedRun): void {
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

/**
 * The run's headers as they are now: a retry before the first output changes the provider, the queue wait and the
 * attempts, so a stream sets them again when its head is sent (with the first output).
 */
function setRunHeaders(response: ServerResponse, run: StartedRun): void {
  response.setHeader('x-iop-run-id', run.handle.runId);
  response.setHeader('x-iop-queue-ms', formatMs(run.handle.queueMs));
  response.setHeader(ATTEMPTS_HEADER, String(run.handle.attempts ?? 1));
  if (run.handle.providerId) response.setHeader('x-iop-provider', run.handle.providerId);
}

/** The run's headers and its overhead figure as a flat name/value list (for `sendJson`). */
function runHeaders(run: StartedRun, overheadMs: number): (string | number)[] {
  const list: (string | number)[] = [
    'x-iop-run-id',
    run.handle.runId,
    'x-iop-queue-ms',
    formatMs(run.handle.queueMs),
    OVERHEAD_HEADER,
    formatMs(overheadMs),
    ATTEMPTS_HEADER,
    String(run.handle.attempts ?? 1),
  ];
  if (run.handle.providerId) list.push('x-iop-provider', run.handle.providerId);
  return list;
}

/** Edge time before the run was submitted (excluding queue wait), plus the run's own overhead when complete. */
function overheadOf(exchange: Exchange, run: StartedRun, complete: boolean): number {
  const beforeSubmit = Math.max(0, run.handle.submittedAt - exchange.arrivedAt - run.handle.queueMs);
  const runOverhead = complete ? (run.handle.overheadMs() ?? 0) : 0;
  return beforeSubmit + runOverhead;
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
