// The OpenAI-compatible HTTP surface as one node:http request listener with one router (openai-router.ts):
// GET /v1/models[/{model}], POST /v1/chat/completions, /v1/responses, /v1/embeddings, /v1/completions, and
// responses by id (background and stored). Other APIs served on this listener (the Anthropic Messages API) are mounts, offered
// each request first. Per request the listener authenticates the caller (surface-kit/request-context.ts), finds
// the route, reads the JSON body and calls the route's named handler (run-handlers.ts, catalogue-handlers.ts);
// every failure reaches `handleError`, the only place statuses and error bodies are decided (openai-error.ts).
//
// Hot path: a plain UTF-8 JSON body (nearly every request) is read by the kit's own reader; express's request
// and response setup, router and body-parser were the largest share of the edge's CPU per request, so express
// is not on this listener at all. Other JSON bodies (another charset, a content-encoding, an `application/*+json`
// type) are read by express.json() alone, with identical results.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express from 'express';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import { systemClock, type Clock } from '../clock.js';
import type { EdgeService } from '../service/types.js';
import type { ModelCallAuthenticator } from '../service/model-call-auth.js';
import { createPrincipalResolver, type PrincipalResolver } from '../governance/principal.js';
import { MAX_HTTP_BODY_BYTES } from '../http/http-server.js';
import type { HttpMount } from '../http/http-mount.js';
import { sendErrorResponse } from '../surface-kit/error-response.js';
import { isPlainJsonRequest, readJsonBody } from '../surface-kit/json-body.js';
import { authenticateCaller, type RequestContext } from '../surface-kit/request-context.js';
import { createRouteResolver } from '../surface-kit/route-resolver.js';
import { createRunStarter } from '../surface-kit/run-starter.js';
import { noMetrics, type SurfaceMetrics } from '../surface-kit/surface-metrics.js';
import { unauthorized } from './unauthorized.js';
import { BackgroundResponses } from './background-responses.js';
import { createResponseResumption } from './response-resumption.js';
import { catalogueHandlers } from './catalogue-handlers.js';
import { MemoryResponseStore } from './memory-response-store.js';
import { responseStoreBounds, type ResponseStore } from './response-store.js';
import { responseHandlers } from './response-handlers.js';
import { StoredConversations } from './stored-conversations.js';
import { elapsedHeader } from './openai-answer.js';
import { mapOpenAIError, OpenAIHttpError } from './openai-error.js';
import { createOpenAIRouter, type OpenAIRouter, type PlainHandler } from './openai-router.js';
import { createRequestPlanner } from './request-planner.js';
import { createRunResponder } from './run-responder.js';
import {
  chatCompletionsHandler,
  completionsHandler,
  embeddingsHandler,
  responsesHandler,
  type RunHandlerDeps,
} from './run-handlers.js';

export interface OpenAIAppOptions {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  metrics?: SurfaceMetrics;
  /**
   * The keys in force, asked on every request (live key changes); default: `openai.api_keys` of `config`.
   */
  principals?: () => PrincipalResolver;
  /** Routes of other APIs served on this listener (the Anthropic Messages API), offered every request first. */
  mounts?: readonly HttpMount[];
  /** Authenticates agents' model calls (run secrets); none = a model call is refused with 401. */
  modelCalls?: ModelCallAuthenticator;
  /**
   * Where stored responses (`store: true`) are kept; none = in this process's memory, bounded by
   * `openai.responses` and a total cap (the edge passes its `<data_dir>/responses.db`).
   */
  responseStore?: ResponseStore;
}

/** Largest accepted request body: what one frame to the node can carry (larger bodies get 413 at once). */
const MAX_BODY_BYTES = MAX_HTTP_BODY_BYTES;

/** The OpenAI surface as a node:http request listener (give it to `http.createServer`). */
export type OpenAIApp = RequestListener & { readonly [CLOSE]: () => void };
const CLOSE = Symbol('closeOpenAIApp');

/** Cancels the app's running background responses (surface shutdown). */
export function closeOpenAIApp(app: OpenAIApp): void {
  app[CLOSE]();
}

export function createOpenAIApp(options: OpenAIAppOptions): OpenAIApp {
  const { logger } = options;
  const metrics = options.metrics ?? noMetrics;
  const fixedPrincipals = createPrincipalResolver({ keys: options.config.openai.api_keys });
  const authenticators = {
    principals: options.principals ?? (() => fixedPrincipals),
    modelCalls: options.modelCalls,
  };
  const { router, background } = openAIRoutes(options, metrics, authenticators.principals);
  const mounts = options.mounts ?? [];
  const handleError = (error: unknown, context: RequestContext): void =>
    sendErrorResponse(error, mapOpenAIError(error), {
      surface: 'openai',
      logger,
      response: context.response,
      path: pathOf(context.request.url ?? ''),
      headers: elapsedHeader(context),
    });

  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    for (const mount of mounts) if (mount.handle(request, response)) return;
    const context: RequestContext = { request, response, arrivedAt: performance.now() };
    const path = pathOf(request.url ?? '');
    const route = router(request.method ?? '', path);
    // A response closes once (`on`: no once-wrapper per request).
    response.on('close', () => {
      const seconds = (performance.now() - context.arrivedAt) / 1000;
      metrics.requestFinished(route?.label ?? 'other', response.statusCode, seconds);
    });
    const refusal = authenticateCaller(context, request.headers.authorization, authenticators);
    const denied = refusal ? unauthorized(refusal) : route ? undefined : unknownUrl(request.method, path);
    if (denied || !route || route.plain) {
      // A body no route reads is drained, so the connection stays usable.
      request.resume();
      if (denied) handleError(denied, context);
      else if (route?.plain) servePlain(route.plain, context);
      return;
    }
    const handle = route.body;
    readBody(request, response)
      .then((body) => handle(body, context))
      .catch((error: unknown) => handleError(error, context));
  };

  function servePlain(handle: PlainHandler, context: RequestContext): void {
    try {
      handle(context)?.catch((error: unknown) => handleError(error, context));
    } catch (error) {
      handleError(error, context);
    }
  }

  return Object.assign(listener, { [CLOSE]: () => background.close() });
}

/** The surface's route handlers over the service, and the router that picks one. */
function openAIRoutes(
  options: OpenAIAppOptions,
  metrics: SurfaceMetrics,
  principals: () => PrincipalResolver,
): { router: OpenAIRouter; background: BackgroundResponses } {
  const { config, service, logger } = options;
  const openai = config.openai;
  const clock = options.clock ?? systemClock;
  const resolver = createRouteResolver(openai, service.models, config.nodes);
  const runs = createRunStarter({
    service,
    logger,
    sessionId: openai.session_id || 'openai',
    timeoutMs: openai.timeout_sec * 1000,
  });
  const store =
    options.responseStore ?? new MemoryResponseStore({ ...responseStoreBounds(openai.responses), clock });
  const conversations = new StoredConversations(store, logger);
  const planner = createRequestPlanner(resolver);
  // Background responses are held in the service's run registry (looked up on the other edges in cluster mode);
  // the ones an earlier process left queued are planned again as the keys in force allow.
  const background = new BackgroundResponses({
    runs,
    registry: service.runRegistry,
    logger,
    clock,
    resumption: createResponseResumption({ openai, planner, runs, conversations, principals }),
  });
  const serveRun = createRunResponder({ openai, runs, metrics });
  const deps: RunHandlerDeps = {
    openai,
    clock,
    resolver,
    planner,
    serveRun,
    runs,
    metrics,
    background,
    conversations,
  };
  const router = createOpenAIRouter({
    chatCompletions: chatCompletionsHandler(deps),
    responses: responsesHandler(deps),
    embeddings: embeddingsHandler(deps),
    completions: completionsHandler(deps),
    ...catalogueHandlers({ clock, planner }),
    ...responseHandlers({ background, conversations }),
  });
  return { router, background };
}

const readAnyJson = express.json({ limit: MAX_BODY_BYTES, type: ['application/json', 'application/*+json'] });

/** The request's JSON body: the kit's reader for plain UTF-8 JSON, express.json() for every other JSON body. */
function readBody(request: IncomingMessage, response: ServerResponse): Promise<unknown> {
  if (isPlainJsonRequest(request)) return readJsonBody(request, MAX_BODY_BYTES);
  return new Promise((resolve, reject) => {
    readAnyJson(request, response, (error?: unknown) => {
      if (error) reject(error instanceof Error ? error : new Error('The request body could not be read'));
      else resolve((request as { body?: unknown }).body);
    });
  });
}

function pathOf(url: string): string {
  const queryAt = url.indexOf('?');
  return queryAt === -1 ? url : url.slice(0, queryAt);
}

function unknownUrl(method: string | undefined, path: string): OpenAIHttpError {
  return new OpenAIHttpError(
    404,
    'invalid_request_error',
    'unknown_url',
    `Unknown request URL: ${method ?? ''} ${path}`,
  );
}
