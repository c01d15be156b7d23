// GET /v1/models[/{id}] in Anthropic's shape (when the request carries `anthropic-version`): the catalogue as
// the caller's key sees it, paged as Anthropic pages it (`limit`, `after_id`, `before_id`).
import { allowsModel } from '../governance/principal.js';
import type { RouteResolver } from '../surface-kit/route-resolver.js';
import type { ModelCatalog } from '../service/types.js';
import { invalidRequest, notFound } from './anthropic-error.js';
import { sendJson, type AnthropicExchange } from './anthropic-exchange.js';

export const MODELS_PATH = '/v1/models';
const DEFAULT_PAGE = 20;
const MAX_PAGE = 1000;

export interface ModelListHandlers {
  listModels(exchange: AnthropicExchange): void;
  getModel(exchange: AnthropicExchange): void;
}

export function modelListHandlers(
  resolver: RouteResolver,
  models: ModelCatalog,
  catalogueCreatedAt: string,
): ModelListHandlers {
  /** The catalogue as the request's key sees it: models outside its allow-list do not exist for it. */
  const visibleModels = (exchange: AnthropicExchange): string[] => {
    const principal = exchange.principal;
    const catalogue = resolver.catalogue();
    return principal ? catalogue.filter((model) => allowsModel(principal, model)) : catalogue;
  };
  /** A `models[]` entry shows its `display_name`; routes and fallback models their id. */
  const modelEntry = (id: string): Record<string, unknown> => {
    const displayName = models.get(id)?.display_name || id;
    return { type: 'model', id, display_name: displayName, created_at: catalogueCreatedAt };
  };
  return {
    listModels(exchange) {
      const ids = visibleModels(exchange);
      const page = pageOf(ids, new URLSearchParams(exchange.query));
      sendJson(exchange, 200, {
        data: page.ids.map(modelEntry),
        has_more: page.hasMore,
        first_id: page.ids[0] ?? null,
        last_id: page.ids[page.ids.length - 1] ?? null,
      });
    },
    /** Ids may contain '/' (org/name), so the id is the rest of the path. */
    getModel(exchange) {
      let id: string;
      try {
        id = decodeURIComponent(exchange.path.slice(MODELS_PATH.length + 1));
      } catch {
        throw invalidRequest('model_id: not a valid URL-encoded id');
      }
      if (!visibleModels(exchange).includes(id)) throw notFound(`model: ${id}`);
      sendJson(exchange, 200, modelEntry(id));
    },
  };
}

/** The page of `ids` a query asks for (400 for a limit out of range or an id not in the list). */
function pageOf(ids: string[], query: URLSearchParams): { ids: string[]; hasMore: boolean } {
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
  if (before !== undefined) {
    const start = Math.max(0, before - limit);
    return { ids: ids.slice(start, before), hasMore: start > 0 };
  }
  const start = after === undefined ? 0 : after + 1;
  return { ids: ids.slice(start, start + limit), hasMore: start + limit < ids.length };
}
