// The OpenAI endpoints that read what exists rather than run something: the model catalogue as the caller's key
// sees it (GET /v1/models[/{model}]) and background responses by id (GET /v1/responses/{id}, POST
// /v1/responses/{id}/cancel), each only for their owner.
import type { Clock } from '../clock.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import { modelNotFound } from '../surface-kit/surface-error.js';
import type { BackgroundResponses } from './background-responses.js';
import { sendJson } from './openai-answer.js';
import type { OpenAIRouteHandlers } from './openai-router.js';
import type { RequestPlanner } from './request-planner.js';

export interface CatalogueHandlerDeps {
  clock: Clock;
  planner: RequestPlanner;
  background: BackgroundResponses;
}

export function catalogueHandlers(
  deps: CatalogueHandlerDeps,
): Pick<OpenAIRouteHandlers, 'listModels' | 'getModel' | 'getResponse' | 'cancelResponse'> {
  const { planner, background } = deps;
  const created = Math.floor(deps.clock.now() / 1000);
  return {
    listModels(context: RequestContext) {
      const data = planner.visibleModels(context).map((id) => modelEntry(id, created));
      sendJson(context, 200, { object: 'list', data });
    },
    getModel(context, model) {
      if (!planner.visibleModels(context).includes(model)) throw modelNotFound(model);
      sendJson(context, 200, modelEntry(model, created));
    },
    async getResponse(context, id) {
      sendJson(context, 200, await background.get(id, context.principal?.id));
    },
    async cancelResponse(context, id) {
      sendJson(context, 200, await background.cancel(id, context.principal?.id));
    },
  };
}

function modelEntry(id: string, created: number) {
  return { id, object: 'model', created, owned_by: 'iop' };
}
