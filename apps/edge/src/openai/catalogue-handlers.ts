// The OpenAI endpoints of the model catalogue as the caller's key sees it (GET /v1/models[/{model}]); responses by
// id are response-handlers.ts.
import type { Clock } from '../clock.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import { modelNotFound } from '../surface-kit/surface-error.js';
import { sendJson } from './openai-answer.js';
import type { OpenAIRouteHandlers } from './openai-router.js';
import type { RequestPlanner } from './request-planner.js';

export interface CatalogueHandlerDeps {
  clock: Clock;
  planner: RequestPlanner;
}

export function catalogueHandlers(
  deps: CatalogueHandlerDeps,
): Pick<OpenAIRouteHandlers, 'listModels' | 'getModel'> {
  const { planner } = deps;
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
  };
}

function modelEntry(id: string, created: number) {
  return { id, object: 'model', created, owned_by: 'iop' };
}
