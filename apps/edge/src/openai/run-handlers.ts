// The OpenAI endpoints that run something, one named handler per route: POST /v1/chat/completions,
// /v1/responses (foreground or background), /v1/completions and /v1/embeddings. Each only translates: validate
// the body, build its run (the service's RunSpec and the caller, request-planner.ts), and serve it (run-responder.ts) with the
// endpoint's writers. A throw reaches the listener's one error handler.
import type { EdgeConfig } from '@iop/config';
import type { Clock } from '../clock.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { setDroppedParamsHeader } from '../surface-kit/dropped-params.js';
import { randomId } from '../surface-kit/ids.js';
import type { RequestContext } from '../surface-kit/request-context.js';
import type { RouteResolver } from '../surface-kit/route-resolver.js';
import type { RunStarter } from '../surface-kit/run-starter.js';
import { withCaller } from '../surface-kit/surface-run.js';
import type { SurfaceMetrics } from '../surface-kit/surface-metrics.js';
import type { SurfaceRun } from '../surface-kit/surface-run.js';
import type { BackgroundResponses } from './background-responses.js';
import type { ResponsesRequestBody } from './request-schemas.js';
import { RESPONSE_RESUME_VERSION, type ResponseResumePayload } from './response-resume.js';
import { chatCompletionBody, streamChatCompletion } from './chat-completion.js';
import { chatRun } from './chat-request.js';
import {
  completionBody,
  completionsRun,
  streamCompletion,
  validateCompletionsRequest,
} from './completions.js';
import { collectEmbeddings, embeddingsBody, embeddingsRun, validateEmbeddingsRequest } from './embeddings.js';
import { overheadOf, runHeaders, sendJson, setRunHeaders } from './openai-answer.js';
import { invalidRequest } from './openai-error.js';
import {
  bodyUser,
  refuseCliAgent,
  requireWorkspace,
  withFields,
  type RequestPlanner,
} from './request-planner.js';
import { validateChatRequest, validateResponsesRequest } from './request-validator.js';
import { responsesBody, type ResponsesOutputContext } from './responses-output.js';
import { streamResponse } from './responses-stream.js';
import type { StoredConversations } from './stored-conversations.js';
import { responsesRunFor } from './responses-run.js';
import { outputOptionsFor, type ServeRun } from './run-responder.js';

/** A route handler that takes the request's parsed JSON body. */
export type BodyHandler = (requestBody: unknown, context: RequestContext) => Promise<void>;

export interface RunHandlerDeps {
  openai: EdgeConfig['openai'];
  clock: Clock;
  resolver: RouteResolver;
  planner: RequestPlanner;
  serveRun: ServeRun;
  runs: RunStarter;
  metrics: SurfaceMetrics;
  background: BackgroundResponses;
  conversations: StoredConversations;
}

const seconds = (clock: Clock): number => Math.floor(clock.now() / 1000);

// Not async: its one await would be the last statement, so serveRun's promise is returned as is (a throw before
// it reaches the error handler either way: the listener calls it in a then-callback).
export function chatCompletionsHandler(deps: RunHandlerDeps): BodyHandler {
  const { planner, openai } = deps;
  return (requestBody, context) => {
    const body = validateChatRequest(requestBody);
    const route = planner.resolveFor(context, body.model);
    const fields = planner.planFields('chat', body, route);
    const run = withFields(chatRun(body, deps.runs.base), fields);
    planner.withImageUrls(withCaller(run, context, bodyUser(requestBody)), route);
    requireWorkspace(route, run.spec);
    const output = outputOptionsFor(openai, run.caller);
    const chat = {
      id: `chatcmpl-${randomId()}`,
      created: seconds(deps.clock),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
      output,
    };
    return deps.serveRun(context, route, run, body.stream === true, {
      json: (collected) => chatCompletionBody(chat, collected),
      stream: (parts, sink) => streamChatCompletion(parts, sink, chat),
    });
  };
}

/** POST /v1/responses: served as it runs, or queued as a background response polled by id. */
export function responsesHandler(deps: RunHandlerDeps): BodyHandler {
  const { openai } = deps;
  return async (requestBody, context) => {
    const body = validateResponsesRequest(requestBody);
    if (body.background === true && body.stream === true) {
      throw invalidRequest(
        "'background' and 'stream' cannot be combined: poll GET /v1/responses/{id} instead",
        'stream',
        'unsupported_field',
      );
    }
    const { route, run } = responsesRunFor(deps, body, context.principal);
    withCaller(run, context, bodyUser(requestBody));
    const owner = context.principal?.id ?? '';
    const submittedAtMs = deps.clock.now();
    const response: ResponsesOutputContext = {
      id: `resp_${randomId()}`,
      createdAt: Math.floor(submittedAtMs / 1000),
      model: body.model,
      request: body,
      output: outputOptionsFor(openai, run.caller),
    };
    // Written once when the response ends; none with `store: false`.
    const record = deps.conversations.recorderFor(body, owner, submittedAtMs);
    if (body.background === true) {
      const queued = deps.background.start(
        response,
        route,
        run,
        outputOptionsFor(openai, run.caller),
        record,
        resumePayloadOf(body, run, submittedAtMs),
      );
      setDroppedParamsHeader(context.response, run.caller);
      sendJson(context, 200, queued);
      return;
    }
    await deps.serveRun(context, route, run, body.stream === true, {
      json: (collected) => {
        const answer = responsesBody(response, collected);
        record?.(answer);
        return answer;
      },
      stream: (parts, sink) => streamResponse(parts, sink, response, record),
    });
  };
}

/** What places a background response again if the edge restarts before it is dispatched. */
function resumePayloadOf(
  body: ResponsesRequestBody,
  run: SurfaceRun,
  submittedAtMs: number,
): ResponseResumePayload {
  const { caller, spec } = run;
  return {
    v: RESPONSE_RESUME_VERSION,
    submittedAtMs,
    request: body,
    ...(caller.traceparent !== undefined ? { traceparent: caller.traceparent } : {}),
    ...(spec.affinityKey !== undefined ? { affinityKey: spec.affinityKey } : {}),
    ...(caller.parent !== undefined ? { parent: caller.parent } : {}),
  };
}

/** Legacy text completion of a raw prompt through the same admission as chat; CLI agents cannot (400). */
export function completionsHandler(deps: RunHandlerDeps): BodyHandler {
  const { planner } = deps;
  return (requestBody, context) => {
    const body = validateCompletionsRequest(requestBody);
    const route = planner.resolveFor(context, body.model);
    refuseCliAgent(deps.resolver, route, 'complete a raw prompt');
    const fields = planner.planFields('completions', body, route);
    const run = withCaller(
      withFields(completionsRun(body, deps.runs.base), fields),
      context,
      bodyUser(requestBody),
    );
    const completion = {
      id: `cmpl-${randomId()}`,
      created: seconds(deps.clock),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
    };
    return deps.serveRun(context, route, run, body.stream === true, {
      // A text completion is text only: reasoning a backend reports is neither returned nor inlined.
      output: { includeReasoning: false, inlineReasoning: false },
      json: (collected) => completionBody(completion, collected),
      stream: (parts, sink) => streamCompletion(parts, sink, completion),
    });
  };
}

/** Embedding vectors through the same admission as chat; CLI agents cannot embed (400). */
export function embeddingsHandler(deps: RunHandlerDeps): BodyHandler {
  const { planner } = deps;
  return async (requestBody, context) => {
    const body = validateEmbeddingsRequest(requestBody);
    const route = planner.resolveFor(context, body.model);
    refuseCliAgent(deps.resolver, route, 'compute embeddings');
    const fields = planner.planFields('embeddings', body, route);
    // No `user` fallback for embeddings: only an `x-session-id` names their conversation.
    const requested = withCaller(withFields(embeddingsRun(body, deps.runs.base), fields), context, undefined);
    const response = context.response;
    setDroppedParamsHeader(response, requested.caller);
    const run = await deps.runs.start(route, requested, disconnectSignal(context.request.socket));
    try {
      let collected;
      try {
        collected = await collectEmbeddings(run.parts(), requested.spec.embedding?.inputs.length ?? 0);
      } catch (error) {
        setRunHeaders(response, run);
        throw error;
      }
      const overhead = overheadOf(context, run, true);
      deps.metrics.overhead(overhead / 1000);
      const answer = embeddingsBody(body.model, collected, body.encoding_format ?? 'float');
      sendJson(context, 200, answer, runHeaders(run, overhead));
    } finally {
      run.finish('client disconnected');
    }
  };
}
