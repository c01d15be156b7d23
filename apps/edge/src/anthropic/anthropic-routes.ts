// The Anthropic Messages API, mounted on the OpenAI listener (same keys, same models, same admission):
//   POST /v1/messages               non-streamed or SSE (`stream: true`)
//   POST /v1/messages/count_tokens  an estimate of the input tokens (token-estimate.ts)
//   GET  /v1/models[/{id}]          Anthropic's list shape, when the request carries `anthropic-version`
//   HEAD /                          the reachability probe Claude Code sends before its first request
// Handlers only translate: authenticate (`x-api-key` or `Authorization: Bearer`), validate the body, resolve the
// model, hand the run to the service (surface `anthropic`) and write the run's parts as a message or as events
// (messages-handlers.ts, model-list-handlers.ts). Every failure reaches `handleError`, which answers with the one
// mapping of anthropic-error.ts. The plumbing shared with the OpenAI surface (caller authentication, route
// resolver, run starter, body reader, SSE sink, error answers) is the surface kit's (surface-kit/).
import type { IncomingMessage } from 'node:http';
import type { EdgeConfig } from '@iop/config';
import type { Logger } from '../logging.js';
import { systemClock, type Clock } from '../clock.js';
import type { EdgeService } from '../service/types.js';
import type { ModelCallAuthenticator } from '../service/model-call-auth.js';
import type { HttpMount } from '../http/http-mount.js';
import { MAX_HTTP_BODY_BYTES } from '../http/http-server.js';
import { createPrincipalResolver, type PrincipalResolver } from '../governance/principal.js';
import type { EdgeMetrics } from '../metrics/edge-metrics.js';
import type { Governance } from '../governance/governance.js';
import { sendErrorResponse } from '../surface-kit/error-response.js';
import { isPlainJsonRequest, readJsonBody } from '../surface-kit/json-body.js';
import { authenticateCaller, type CallerRefusal } from '../surface-kit/request-context.js';
import { createRouteResolver } from '../surface-kit/route-resolver.js';
import { createRunStarter } from '../surface-kit/run-starter.js';
import { edgeMetricsRecorder, noMetrics, type SurfaceMetrics } from '../surface-kit/surface-metrics.js';
import { AnthropicHttpError, invalidRequest, mapAnthropicError } from './anthropic-error.js';
import type { AnthropicExchange } from './anthropic-exchange.js';
import { messagesHandlers } from './messages-handlers.js';
import { modelListHandlers, MODELS_PATH } from './model-list-handlers.js';

export interface AnthropicRoutesOptions {
  config: EdgeConfig;
  service: EdgeService;
  logger: Logger;
  clock?: Clock;
  /** Request, first-token and overhead figures (labelled surface `anthropic` by the runtime). */
  metrics?: SurfaceMetrics;
  /** The keys in force, asked on every request (live key changes); default: `openai.api_keys` of `config`. */
  principals?: () => PrincipalResolver;
  /** Authenticates agents' model calls (run secrets); none = a model call is refused with 401. */
  modelCalls?: ModelCallAuthenticator;
}

/** The header that marks a `GET /v1/models` as the Anthropic SDK's (the OpenAI list answers it otherwise). */
export const ANTHROPIC_VERSION_HEADER = 'anthropic-version';

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
  const authenticators = {
    principals: options.principals ?? (() => fixedPrincipals),
    modelCalls: options.modelCalls,
  };
  const models = modelListHandlers(resolver, service.models, new Date(clock.now()).toISOString());
  const messages = messagesHandlers({ resolver, runs, metrics });
  const handleError = (error: unknown, exchange: AnthropicExchange): void =>
    sendErrorResponse(error, mapAnthropicError(error), {
      surface: 'anthropic',
      logger,
      response: exchange.response,
      path: exchange.path,
    });

  async function serve(route: Route, exchange: AnthropicExchange): Promise<void> {
    const { request, response } = exchange;
    if (route === 'probe') {
      // Says only that the listener is up (which a TCP connect tells anyone anyway): no key needed.
      response.writeHead(200, ['content-length', '0']);
      response.end();
      return;
    }
    // `x-api-key`, else `Authorization: Bearer`.
    const apiKey = request.headers['x-api-key'];
    const credentials =
      typeof apiKey === 'string' && apiKey !== '' ? `Bearer ${apiKey}` : request.headers.authorization;
    const refusal = authenticateCaller(exchange, credentials, authenticators);
    if (refusal || route === 'models' || route === 'model') {
      // GET bodies are not read; a refused POST's body is drained so the connection stays usable.
      request.resume();
      if (refusal) throw unauthorized(refusal);
      if (route === 'models') models.listModels(exchange);
      else models.getModel(exchange);
      return;
    }
    if (!isPlainJsonRequest(request)) {
      request.resume();
      throw invalidRequest("The request body must be JSON: send 'content-type: application/json' (UTF-8)");
    }
    const body = await readJsonBody(request, MAX_HTTP_BODY_BYTES);
    if (route === 'count_tokens') messages.countTokens(body, exchange);
    else await messages.messages(body, exchange);
  }

  return {
    handle(request, response) {
      const url = request.url ?? '';
      // Most requests on this listener are OpenAI's: one prefix test decides for them.
      if (!url.startsWith('/v1/m') && url !== '/') return false;
      const queryAt = url.indexOf('?');
      const path = queryAt === -1 ? url : url.slice(0, queryAt);
      const route = routeOf(request, path);
      if (!route) return false;
      const exchange: AnthropicExchange = {
        request,
        response,
        path,
        query: queryAt === -1 ? '' : url.slice(queryAt + 1),
        arrivedAt: performance.now(),
      };
      response.on('close', () => {
        const seconds = (performance.now() - exchange.arrivedAt) / 1000;
        metrics.requestFinished(ROUTE_LABELS[route], response.statusCode, seconds);
      });
      serve(route, exchange).catch((error: unknown) => handleError(error, exchange));
      return true;
    },
  };
}

/** The 401 for a refused caller (an API key or, for an agent's model call, its run key). */
function unauthorized(refusal: CallerRefusal): AnthropicHttpError {
  return refusal.reason === 'missing'
    ? new AnthropicHttpError(
        401,
        'authentication_error',
        "x-api-key header is required (or 'Authorization: Bearer <key>')",
      )
    : new AnthropicHttpError(401, 'authentication_error', 'invalid x-api-key');
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
