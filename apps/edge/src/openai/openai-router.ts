// The OpenAI listener's one router: which route a request is (method and path, the query left aside), with its
// metric label, and the handler that answers it. The hot routes (POST /v1/chat/completions, /v1/responses) are a
// single map lookup with nothing allocated; routes with a path parameter take it decoded (model ids may contain
// '/', e.g. org/name, so a model id is the rest of the path). A GET route answers HEAD too. Responses by id:
// GET, DELETE, POST .../cancel and GET .../input_items.
import type { RequestContext } from '../surface-kit/request-context.js';
import { invalidRequest } from './openai-error.js';
import type { BodyHandler } from './run-handlers.js';

/** A route handler that reads no body (its parameters come from the path). */
export type PlainHandler = (context: RequestContext) => void | Promise<void>;

/** What the router found: a handler of the JSON body, or one of the request alone; and the metric label. */
export type MatchedRoute =
  | { readonly label: string; readonly body: BodyHandler; readonly plain?: undefined }
  | { readonly label: string; readonly plain: PlainHandler; readonly body?: undefined };

export interface OpenAIRouteHandlers {
  chatCompletions: BodyHandler;
  responses: BodyHandler;
  embeddings: BodyHandler;
  completions: BodyHandler;
  listModels: PlainHandler;
  getModel: (context: RequestContext, model: string) => void;
  getResponse: (context: RequestContext, id: string) => Promise<void>;
  cancelResponse: (context: RequestContext, id: string) => Promise<void>;
  deleteResponse: (context: RequestContext, id: string) => Promise<void>;
  listInputItems: (context: RequestContext, id: string) => void;
}

const MODELS = '/v1/models';
const RESPONSES = '/v1/responses/';
const CANCEL = '/cancel';
const INPUT_ITEMS = '/input_items';

export type OpenAIRouter = (method: string, path: string) => MatchedRoute | undefined;

export function createOpenAIRouter(handlers: OpenAIRouteHandlers): OpenAIRouter {
  const posts = new Map<string, MatchedRoute>([
    ['/v1/chat/completions', { label: '/v1/chat/completions', body: handlers.chatCompletions }],
    ['/v1/responses', { label: '/v1/responses', body: handlers.responses }],
    ['/v1/embeddings', { label: '/v1/embeddings', body: handlers.embeddings }],
    ['/v1/completions', { label: '/v1/completions', body: handlers.completions }],
  ]);
  const models: MatchedRoute = { label: MODELS, plain: handlers.listModels };
  return (method, path) => {
    if (method === 'POST') {
      const route = posts.get(path);
      if (route) return route;
      const id = responseIdOf(path, CANCEL);
      if (id === undefined) return undefined;
      return {
        label: '/v1/responses/:id/cancel',
        plain: (context) => handlers.cancelResponse(context, decodeSegment(id)),
      };
    }
    if (method === 'DELETE') {
      const id = responseIdOf(path, '');
      if (id === undefined) return undefined;
      return {
        label: '/v1/responses/:id',
        plain: (context) => handlers.deleteResponse(context, decodeSegment(id)),
      };
    }
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    if (path === MODELS) return models;
    if (path.startsWith(`${MODELS}/`) && path.length > MODELS.length + 1) {
      const rest = path.slice(MODELS.length + 1);
      return {
        label: '/v1/models/:model',
        plain: (context) => handlers.getModel(context, rest.split('/').map(decodeSegment).join('/')),
      };
    }
    const listed = responseIdOf(path, INPUT_ITEMS);
    if (listed !== undefined) {
      return {
        label: '/v1/responses/:id/input_items',
        plain: (context) => handlers.listInputItems(context, decodeSegment(listed)),
      };
    }
    const id = responseIdOf(path, '');
    if (id === undefined) return undefined;
    return {
      label: '/v1/responses/:id',
      plain: (context) => handlers.getResponse(context, decodeSegment(id)),
    };
  };
}

/** The `:id` of `/v1/responses/:id{suffix}`, or undefined when the path is not that route. */
function responseIdOf(path: string, suffix: string): string | undefined {
  if (!path.startsWith(RESPONSES) || !path.endsWith(suffix)) return undefined;
  const id = path.slice(RESPONSES.length, path.length - suffix.length);
  return id === '' || id.includes('/') ? undefined : id;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw invalidRequest(`Failed to decode the path segment '${segment}'`, null, 'invalid_url');
  }
}
