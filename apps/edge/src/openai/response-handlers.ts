// The OpenAI endpoints of one response by id, each only for its owner (another key's id is a 404 like an unknown
// one): GET /v1/responses/{id} (a background response's current state, else the stored response), POST
// /v1/responses/{id}/cancel (background only), DELETE /v1/responses/{id} (the stored response and the background
// record) and GET /v1/responses/{id}/input_items (the stored response's own input items, paged as OpenAI lists).
import type { RequestContext } from '../surface-kit/request-context.js';
import { responseNotFound, type BackgroundResponses } from './background-responses.js';
import { sendJson } from './openai-answer.js';
import { invalidRequest } from './openai-error.js';
import type { OpenAIRouteHandlers } from './openai-router.js';
import type { InputItemsQuery, StoredConversations } from './stored-conversations.js';

export interface ResponseHandlerDeps {
  background: BackgroundResponses;
  conversations: StoredConversations;
}

const MAX_LIMIT = 100;
const DEFAULT_LIMIT = 20;

export function responseHandlers(
  deps: ResponseHandlerDeps,
): Pick<OpenAIRouteHandlers, 'getResponse' | 'cancelResponse' | 'deleteResponse' | 'listInputItems'> {
  const { background, conversations } = deps;
  const ownerOf = (context: RequestContext): string => context.principal?.id ?? '';
  return {
    async getResponse(context, id) {
      const owner = ownerOf(context);
      const found = (await background.find(id, owner)) ?? conversations.get(id, owner);
      if (!found) throw responseNotFound(id);
      sendJson(context, 200, found);
    },
    async cancelResponse(context, id) {
      sendJson(context, 200, await background.cancel(id, ownerOf(context)));
    },
    async deleteResponse(context, id) {
      const owner = ownerOf(context);
      const stored = conversations.delete(id, owner);
      const running = await background.delete(id, owner);
      if (!stored && !running) throw responseNotFound(id);
      sendJson(context, 200, { id, object: 'response.deleted', deleted: true });
    },
    listInputItems(context, id) {
      const query = inputItemsQuery(context.request.url ?? '');
      const page = conversations.inputItems(id, ownerOf(context), query);
      if (!page) throw responseNotFound(id);
      sendJson(context, 200, page);
    },
  };
}

/** `limit` (1-100, default 20), `order` (asc or desc, default desc) and `after` of the request's query. */
function inputItemsQuery(url: string): InputItemsQuery {
  const queryAt = url.indexOf('?');
  const params = new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1));
  const limitText = params.get('limit');
  const limit = limitText === null ? DEFAULT_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw invalidRequest(`Invalid value for 'limit': expected an integer from 1 to ${MAX_LIMIT}`, 'limit');
  const order = params.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc')
    throw invalidRequest(`Invalid value for 'order': expected one of "asc", "desc"`, 'order');
  return { limit, order, after: params.get('after') ?? undefined };
}
