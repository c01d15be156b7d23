// The one path from a validated /v1/responses body to its route and run: for a new request (run-handlers.ts) and
// for a background response placed again after an edge restart (response-resumption.ts), so both get the same
// model resolution for the key, stored-conversation history, field planning, RunSpec, image and workspace checks.
import type { Principal } from '../governance/principal.js';
import type { ResolvedRoute } from '../surface-kit/route-resolver.js';
import type { RunStarter } from '../surface-kit/run-starter.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';
import { requireWorkspace, withFields, type RequestPlanner } from './request-planner.js';
import type { ResponsesRequestBody } from './request-schemas.js';
import { responsesRun } from './responses-request.js';
import { withHistory, type StoredConversations } from './stored-conversations.js';

export interface ResponsesRunDeps {
  planner: RequestPlanner;
  runs: RunStarter;
  conversations: StoredConversations;
}

/**
 * The route and run of a validated /v1/responses body for `principal` (undefined: anonymous): the one path of a
 * new request and of a background response placed again after an edge restart (response-resumption.ts). The
 * caller context beyond the principal (traceparent, affinity key, parent run) is added by the caller.
 */
export function responsesRunFor(
  deps: ResponsesRunDeps,
  body: ResponsesRequestBody,
  principal: Principal | undefined,
): { route: ResolvedRoute; run: SurfaceRun } {
  const { planner } = deps;
  const route = planner.resolveFor({ principal }, body.model);
  // A continued conversation: the stored chain's items come before this request's input.
  const history = body.previous_response_id
    ? deps.conversations.history(body.previous_response_id, principal?.id ?? '')
    : [];
  const fields = planner.planFields('responses', body, route);
  const run = withFields(responsesRun(withHistory(body, history), deps.runs.base), fields);
  if (principal) run.caller.principal = principal;
  planner.withImageUrls(run, route);
  requireWorkspace(route, run.spec);
  return { route, run };
}
