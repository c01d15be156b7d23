// The Anthropic Messages API, mounted on the OpenAI listener (same keys, same models, same admission):
//   POST /v1/messages               non-streamed or SSE (`stream: true`)
//   POST /v1/messages/count_tokens  an estimate of the input tokens (token-estimate.ts)
//   GET  /v1/models[/{id}]          Anthropic's list shape, when the request carries `anthropic-version`
//   HEAD /                          the reachability probe Claude Code sends before its first request
// Handlers only translate: authenticate (`x-api-key` or `Authorization: Bearer`), validate the body, resolve the
// model with the OpenAI surface's resolver, hand the run to the service (surface `anthropic`) and write the
// run's parts as a message or as events. Every failure reaches `handleError`, which answers with the one mapping
// of anthropic-error.ts. The route plumbing shared with the OpenAI surface (route resolver, run starter, body
// reader, SSE sink) is imported from openai/, not copied.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import { systemClock, type Clock } from '../clock.js';
import type { EdgeService, ParentRef } from '../service/types.js';
import { bearerSecret, type ModelCallAuthenticator } from '../service/model-call-auth.js';
import type { HttpMount } from '../http/http-mount.js';
import { modelCallOf } from '../http/model-call-socket.js';
import { MAX_HTTP_BODY_BYTES } from '../http/http-server.js';
import {
  allowsModel,
  createPrincipalResolver,
  type Principal,
  type PrincipalResolver,
} from '../governance/principal.js';
import { disconnectSignal } from '../openai/openai-app.js';
import { isPlainJsonRequest, readJsonBody } from '../openai/json-body.js';
import { edgeMetricsRecorder, noMetrics, type OpenAIMetrics } from '../openai/openai-metrics.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { Governance } from '../governance/governance.js';
import { createRouteResolver, type ResolvedRoute } from '../openai/route-resolver.js';
import { createRunStarter, type StartedRun } from '../openai/run-starter.js';
import { requestAffinityKey, type RequestedRun } from '../openai/requested-run.js';
import { SseSink } from '../openai/sse-sink.js';
import { AnthropicHttpError, invalidRequest, mapAnthropicError, notFound } from './anthropic-error.js';
import { messageBody, messageId, streamMessage, type MessageOutputContext } from './messages-output.js';
import { conversationOf, messagesRequestedRun } from './messages-request.js';
import { validateCountTokensRequest, validateMessagesRequest } from './messages-validator.js';
import { estimateInputTokens } from './token-estimate.js';

export interface AnthropicRoutesOptions {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  /** Request, first-token and overhead figures (labelled surface `anthropic` by the runtime). */
  metrics?: OpenAIMetrics;
  /** The keys in force, asked on every request (live key changes); default: `openai.api_keys` of `config`. */
  principals?: () => PrincipalResolver;
  /** Authenticates agents' model calls (run secrets); none = a model call is refused with 401. */
  modelCalls?: ModelCallAuthenticator;
}

/** The header that marks a `GET /v1/models` as the Anthropic SDK's (the OpenAI list answers it otherwise). */
export const ANTHROPIC_VERSION_HEADER = 'anthropic-version';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const MODELS_PATH = '/v1/models';
const DEFAULT_PAGE = 20;
const MAX_PAGE = 1000;

interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** The request's path without its query (`/v1/messages?beta=true` → `/v1/messages`). */
  readonly path: string;
  readonly query: string;
  /** performance.now() when the request arrived. */
  readonly arrivedAt: number;
  principal?: Principal | undefined;
  /** Set for an agent's model call: the run it is a child of. */
  parent?: ParentRef | undefined;
}

type Route = 'messages' | 'count_tokens' | 'models' | 'model' | 'probe';

/** Metric route labels (known routes only, so paths cannot grow the label set). */
const ROUTE_LABELS: Record<Route, string> = {
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
  models: '/v1/models',
  model: '/v1/models/:model',
  probe: 'HEAD /',
};

export function createAnthropicRoutes(options: AnthropicRoutesOptions): HttpMount {
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
    surface: 'anthropic',
  });
  const fixedPrincipals = createPrincipalResolver({ keys: openai.api_keys });
  const principals = options.principals ?? (() => fixedPrincipals);
  const catalogueCreatedAt = new Date(clock.now()).toISOString();

  return {
    handle(request, response) {
      const url = request.url ?? '';
      // Most requests on this listener are OpenAI's: one prefix test decides for them.
      if (!url.startsWith('/v1/m') && url !== '/') return false;
      const queryAt = url.indexOf('?');
      const path = queryAt === -1 ? url : url.slice(0, queryAt);
      const route = routeOf(request, path);
      if (!route) return false;
      const exchange: Exchange = {
        request,
        response,
        path,
        query: queryAt === -1 ? '' : url.slice(queryAt + 1),
        arrivedAt: performance.now(),
      };
      response.on('close', () => {
        metrics.requestFinished(
          ROUTE_LABELS[route],
          response.statusCode,
          (performance.now() - exchange.arrivedAt) / 1000,
        );
      });
      serve(route, exchange).catch((error: unknown) => handleError(error, exchange));
      return true;
    },
  };

  async function serve(route: Route, exchange: Exchange): Promise<void> {
    const { request, response } = exchange;
    if (route === 'probe') {
      // Says only that the listener is up (which a TCP connect tells anyone anyway): no key needed.
      response.writeHead(200, ['content-length', '0']);
      response.end();
      return;
    }
    const denied = authorize(exchange);
    if (denied || route === 'models' || route === 'model') {
      // GET bodies are not read; a refused POST's body is drained so the connection stays usable.
      request.resume();
      if (denied) throw denied;
      if (route === 'models') listModels(exchange);
      else getModel(exchange);
      return;
    }
    if (!isPlainJsonRequest(request)) {
      request.resume();
      throw invalidRequest("The request body must be JSON: send 'content-type: application/json' (UTF-8)");
    }
    const body = await readJsonBody(request, MAX_HTTP_BODY_BYTES);
    if (route === 'count_tokens') countTokens(body, exchange);
    else await messages(body, exchange);
  }

  /** Sets the exchange's principal, or returns the 401 to answer with. */
  function authorize(exchange: Exchange): AnthropicHttpError | undefined {
    const headers = exchange.request.headers;
    const apiKey = headers['x-api-key'];
    const credentials =
      typeof apiKey === 'string' && apiKey !== '' ? `Bearer ${apiKey}` : headers.authorization;
    const call = modelCallOf(exchange.request.socket);
    // An agent's model call authenticates with its run's secret only (service/model-call-auth.ts).
    const result = call
      ? (options.modelCalls?.authenticate(call, bearerSecret(credentials)) ?? { kind: 'invalid' as const })
      : principals().authenticate(credentials);
    if (result.kind === 'accepted' && 'parent' in result) exchange.parent = result.parent;
    switch (result.kind) {
      case 'open':
        return undefined;
      case 'accepted':
        exchange.principal = result.principal;
        return undefined;
      case 'missing':
        return new AnthropicHttpError(
          401,
          'authentication_error',
          "x-api-key header is required (or 'Authorization: Bearer <key>')",
        );
      case 'invalid':
        return new AnthropicHttpError(401, 'authentication_error', 'invalid x-api-key');
      default: {
        const unreachable: never = result;
        return unreachable;
      }
    }
  }

  /** The catalogue as the request's key sees it: models outside its allow-list do not exist for it. */
  function visibleModels(exchange: Exchange): string[] {
    const principal = exchange.principal;
    const catalogue = resolver.catalogue();
    return principal ? catalogue.filter((model) => allowsModel(principal, model)) : catalogue;
  }

  function resolveFor(exchange: Exchange, model: string): ResolvedRoute {
    const principal = exchange.principal;
    if (principal && !allowsModel(principal, model)) throw notFound(`model: ${model}`);
    return resolver.resolve(model);
  }

  /** A `models[]` entry shows its `display_name`; routes and fallback models their id. */
  function modelEntry(id: string): Record<string, unknown> {
    const displayName = service.models.get(id)?.display_name || id;
    return { type: 'model', id, display_name: displayName, created_at: catalogueCreatedAt };
  }

  /** GET /v1/models: a page of the catalogue (`limit`, `after_id`, `before_id`, as Anthropic pages it). */
  function listModels(exchange: Exchange): void {
    const ids = visibleModels(exchange);
    const query = new URLSearchParams(exchange.query);
    const limitText = query.get('limit');
    const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw invalidRequest(`limit: Input should be an integer from 1 to ${MAX_PAGE}`);
    }
    const position = (name: string): number | undefined => {
      const id = query.get(name);
      if (id === null) return undefined;
      const index = ids.indexOf(id);
      if (index === -1) throw invalidRequest(`${name}: '${id}' is not a model id of this list`);
      return index;
    };
    const after = position('after_id');
    const before = position('before_id');
    let page: string[];
    let hasMore: boolean;
    if (before !== undefined) {
      const start = Math.max(0, before - limit);
      page = ids.slice(start, before);
      hasMore = start > 0;
    } else {
      const start = after === undefined ? 0 : after + 1;
      page = ids.slice(start, start + limit);
      hasMore = start + limit < ids.length;
    }
    sendJson(exchange, 200, {
      data: page.map(modelEntry),
      has_more: hasMore,
      first_id: page[0] ?? null,
      last_id: page[page.length - 1] ?? null,
    });
  }

  /** GET /v1/models/{id}: ids may contain '/' (org/name), so the id is the rest of the path. */
  function getModel(exchange: Exchange): void {
    let id: string;
    try {
      id = decodeURIComponent(exchange.path.slice(MODELS_PATH.length + 1));
    } catch {
      throw invalidRequest('model_id: not a valid URL-encoded id');
    }
    if (!visibleModels(exchange).includes(id)) throw notFound(`model: ${id}`);
    sendJson(exchange, 200, modelEntry(id));
  }

  function countTokens(raw: unknown, exchange: Exchange): void {
    const body = validateCountTokensRequest(raw);
    resolveFor(exchange, body.model);
    sendJson(exchange, 200, { input_tokens: estimateInputTokens(conversationOf(body)) });
  }

  async function messages(raw: unknown, exchange: Exchange): Promise<void> {
    const body = validateMessagesRequest(raw);
    const route = resolveFor(exchange, body.model);
    if (route.workspaceRequired) {
      throw invalidRequest(
        `model: '${body.model}' runs a CLI agent that needs a workspace, which the Messages API cannot name; use the OpenAI API with metadata.workspace`,
      );
    }
    const spec = withCaller(messagesRequestedRun(body), exchange);
    const stream = body.stream === true;
    // A non-streamed answer is written once the run ended: the node may fetch it whole from the backend.
    spec.collect = !stream;
    const context: MessageOutputContext = { id: messageId(), model: body.model };
    const { request, response } = exchange;
    const signal = disconnectSignal(request.socket);
    const run = await runs.start(route, spec, signal);
    try {
      if (!stream) {
        setRunHeaders(response, run);
        const collected = await run.collect({ includeReasoning: true, inlineReasoning: false });
        // Again: a retry before the first output changed the provider and the attempts.
        setRunHeaders(response, run);
        sendJson(exchange, 200, messageBody(context, collected));
        return;
      }
      setRunHeaders(response, run);
      const sink = new SseSink(response, signal, () => {
        metrics.firstToken((performance.now() - exchange.arrivedAt) / 1000);
        // The head leaves with the first output: the attempt that produced it is the one to name.
        setRunHeaders(response, run);
        return {};
      });
      await streamMessage(run.parts(), sink, context);
      sink.end();
    } finally {
      run.finish('client disconnected');
    }
  }

  /**
   * Adds who is asking, in which trace and in which conversation: the key's principal, the request's
   * `traceparent` header, and its affinity key (`x-session-id`, else `metadata.user_id`).
   */
  function withCaller(spec: RequestedRun, exchange: Exchange): RequestedRun {
    spec.principal = exchange.principal;
    if (exchange.parent) spec.parent = exchange.parent;
    const traceparent = exchange.request.headers.traceparent;
    if (typeof traceparent === 'string' && traceparent !== '') spec.traceparent = traceparent;
    const affinityKey = requestAffinityKey(
      exchange.request.headers['x-session-id'],
      spec.metadata['user_id'],
    );
    if (affinityKey !== undefined) spec.affinityKey = affinityKey;
    return spec;
  }

  function handleError(error: unknown, exchange: Exchange): void {
    const mapped = mapAnthropicError(error);
    const { response, path } = exchange;
    if (response.destroyed) {
      logger.debug({ code: mapped.code, path }, 'anthropic client went away');
      return;
    }
    if (mapped.status >= 500) {
      logger.warn({ err: error, status: mapped.status, code: mapped.code, path }, 'anthropic request failed');
    } else {
      logger.debug({ status: mapped.status, code: mapped.code, path }, 'anthropic request rejected');
    }
    if (response.headersSent) {
      if (!response.writableEnded) response.end();
      return;
    }
    for (const [name, value] of Object.entries(mapped.headers)) response.setHeader(name, value);
    sendJson(exchange, mapped.status, mapped.body);
  }
}

/** Which of the mount's routes a request is, if any. */
function routeOf(request: IncomingMessage, path: string): Route | undefined {
  switch (request.method ?? '') {
    case 'POST':
      if (path === '/v1/messages') return 'messages';
      if (path === '/v1/messages/count_tokens') return 'count_tokens';
      return undefined;
    case 'GET':
      // Without the header the request is the OpenAI SDK's and gets the OpenAI list.
      if (request.headers[ANTHROPIC_VERSION_HEADER] === undefined) return undefined;
      if (path === MODELS_PATH) return 'models';
      if (path.startsWith(`${MODELS_PATH}/`) && path.length > MODELS_PATH.length + 1) return 'model';
      return undefined;
    case 'HEAD':
      return path === '/' ? 'probe' : undefined;
    default:
      return undefined;
  }
}

function setRunHeaders(response: ServerResponse, run: StartedRun): void {
  response.setHeader('x-iop-run-id', run.handle.runId);
  response.setHeader('x-iop-queue-ms', run.handle.queueMs.toFixed(2));
  response.setHeader('x-iop-attempts', String(run.handle.attempts ?? 1));
  if (run.handle.providerId) response.setHeader('x-iop-provider', run.handle.providerId);
}

/** Writes a whole JSON answer with the headers set so far. */
function sendJson(exchange: Exchange, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const response = exchange.response;
  response.writeHead(status, [
    'content-type',
    JSON_CONTENT_TYPE,
    'content-length',
    String(Buffer.byteLength(text)),
  ]);
  response.end(text);
}

/** What the Anthropic routes use of the runtime's core. */
export interface AnthropicRoutesDeps {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  metrics?: EdgeMetrics;
  governance?: Pick<Governance, 'keys'>;
  /** Authenticates agents' model calls; none = refused. */
  modelCallAuth?: ModelCallAuthenticator;
}

/** The routes as the runtime mounts them on the OpenAI listener: the OpenAI keys (live), surface `anthropic`. */
export function anthropicRoutesFor(deps: AnthropicRoutesDeps): HttpMount {
  return createAnthropicRoutes({
    config: deps.config,
    service: deps.service,
    logger: deps.logger.child({ surface: 'anthropic' }),
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.metrics ? { metrics: edgeMetricsRecorder(deps.metrics, 'anthropic') } : {}),
    ...(deps.governance ? { principals: deps.governance.keys.openai } : {}),
    ...(deps.modelCallAuth ? { modelCalls: deps.modelCallAuth } : {}),
  });
}
