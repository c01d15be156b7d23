// A background response left `queued` by an earlier edge process, planned again from its resume payload
// (response-resume.ts) through the surface's normal path (responses-run.ts responsesRunFor: the same model
// resolution, field planning, RunSpec building, stored conversation and limits), as the key it was accepted under
// is configured now. Why it cannot be placed again is thrown as the OpenAIHttpError its client reads in the
// response's `error`:
//   - the key is no longer configured (or the edge has no keys now) → `invalid_api_key`;
//   - an anonymous response (no keys then) while keys are configured now → `invalid_api_key`;
//   - the key is no longer allowed the model, or the model is gone → `model_not_found`;
//   - any other refusal of the request as it would be refused if sent now (its previous response is gone, ...).
// The deadline and the wait for a provider are the background runner's (background-responses.ts).
import type { EdgeConfig } from '@iop/config';
import { allowsModel, type Principal, type PrincipalResolver } from '../governance/principal.js';
import type { RunKey } from '../service/run-registry.js';
import type { ResolvedRoute } from '../surface-kit/route-resolver.js';
import type { OutputOptions } from '../surface-kit/run-output.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';
import { OpenAIHttpError } from './openai-error.js';
import { validateResponsesRequest } from './request-validator.js';
import type { ResponseResumePayload } from './response-resume.js';
import type { ResponsesOutputContext } from './responses-output.js';
import { outputOptionsFor } from './run-responder.js';
import { responsesRunFor, type ResponsesRunDeps } from './responses-run.js';
import type { ResponseRecorder } from './stored-conversations.js';

export interface ResponseResumptionDeps extends ResponsesRunDeps {
  openai: EdgeConfig['openai'];
  /** The keys in force now (live key changes included). */
  principals: () => PrincipalResolver;
}

/** A response planned again: what the background runner needs to place it. */
export interface ResumedResponse {
  context: ResponsesOutputContext;
  route: ResolvedRoute;
  run: SurfaceRun;
  output: OutputOptions;
  onEnded: ResponseRecorder | undefined;
  submittedAtMs: number;
}

export interface ResponseResumption {
  /** Plans the response of `key` again from its payload; throws (OpenAIHttpError) why it cannot be placed. */
  plan(key: RunKey, state: unknown, payload: ResponseResumePayload): ResumedResponse;
}

export function createResponseResumption(deps: ResponseResumptionDeps): ResponseResumption {
  return {
    plan(key, state, payload) {
      const body = validateResponsesRequest(structuredClone(payload.request));
      const principal = principalNow(deps.principals(), key.principal, body.model);
      const { route, run } = responsesRunFor(deps, body, principal);
      if (payload.parent) run.caller.parent = payload.parent;
      if (payload.traceparent) run.caller.traceparent = payload.traceparent;
      if (payload.affinityKey !== undefined) run.spec.affinityKey = payload.affinityKey;
      const createdAt = (state as Record<string, unknown> | null)?.['created_at'];
      const output = outputOptionsFor(deps.openai, run.caller);
      return {
        context: {
          id: key.id,
          createdAt: typeof createdAt === 'number' ? createdAt : Math.floor(payload.submittedAtMs / 1000),
          model: body.model,
          request: body,
          output,
        },
        route,
        run,
        output,
        onEnded: deps.conversations.recorderFor(body, key.principal, payload.submittedAtMs),
        submittedAtMs: payload.submittedAtMs,
      };
    },
  };
}

/**
 * The principal a response recorded under key id `owner` ('' = anonymous) runs as now, by id from the keys in
 * force; throws when that key is gone or may no longer use `model`.
 */
function principalNow(resolver: PrincipalResolver, owner: string, model: string): Principal | undefined {
  const notPlaced = 'It was not placed again after the edge restarted; send the request again.';
  if (owner === '') {
    if (!resolver.required) return undefined;
    throw invalidKey(
      'This response was accepted without an API key (none was configured then) and API keys are configured ' +
        `now. ${notPlaced}`,
    );
  }
  const lookup = resolver.byId(owner);
  switch (lookup.kind) {
    case 'open':
      throw invalidKey(
        `The API key '${owner}' this response was accepted under is no longer configured (the edge has no keys ` +
          `now). ${notPlaced}`,
      );
    case 'unknown':
      throw invalidKey(
        `The API key '${owner}' this response was accepted under is no longer configured. ${notPlaced}`,
      );
    case 'found':
      if (!allowsModel(lookup.principal, model)) {
        throw new OpenAIHttpError(
          404,
          'invalid_request_error',
          'model_not_found',
          `The API key '${owner}' is no longer allowed the model '${model}'. ${notPlaced}`,
          'model',
        );
      }
      return lookup.principal;
    default: {
      const unreachable: never = lookup;
      return unreachable;
    }
  }
}

function invalidKey(message: string): OpenAIHttpError {
  return new OpenAIHttpError(401, 'authentication_error', 'invalid_api_key', message);
}
