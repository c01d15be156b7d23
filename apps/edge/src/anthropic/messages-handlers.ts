// POST /v1/messages (a message, or its events with `stream: true`) and POST /v1/messages/count_tokens: validate
// the body, resolve the model for the caller's key, hand the run to the service (surface `anthropic`) through
// the kit's run starter and write the run's parts in Anthropic's shape (messages-output.ts).
import { allowsModel } from '../governance/principal.js';
import { disconnectSignal } from '../surface-kit/disconnect-signal.js';
import { withCaller, type SurfaceRun } from '../surface-kit/surface-run.js';
import type { ResolvedRoute, RouteResolver } from '../surface-kit/route-resolver.js';
import type { RunStarter } from '../surface-kit/run-starter.js';
import { SseSink } from '../surface-kit/sse-sink.js';
import type { SurfaceMetrics } from '../surface-kit/surface-metrics.js';
import { invalidRequest, notFound } from './anthropic-error.js';
import { sendJson, setRunHeaders, type AnthropicExchange } from './anthropic-exchange.js';
import { messageBody, messageId, streamMessage, type MessageOutputContext } from './messages-output.js';
import { conversationOf, messagesRun } from './messages-request.js';
import { validateCountTokensRequest, validateMessagesRequest } from './messages-validator.js';
import { estimateInputTokens } from './token-estimate.js';

export interface MessagesHandlerDeps {
  resolver: RouteResolver;
  runs: RunStarter;
  metrics: SurfaceMetrics;
}

export interface MessagesHandlers {
  messages(body: unknown, exchange: AnthropicExchange): Promise<void>;
  countTokens(body: unknown, exchange: AnthropicExchange): void;
}

export function messagesHandlers(deps: MessagesHandlerDeps): MessagesHandlers {
  const resolveFor = (exchange: AnthropicExchange, model: string): ResolvedRoute => {
    const principal = exchange.principal;
    if (principal && !allowsModel(principal, model)) throw notFound(`model: ${model}`);
    return deps.resolver.resolve(model);
  };
  return {
    countTokens(raw, exchange) {
      const body = validateCountTokensRequest(raw);
      resolveFor(exchange, body.model);
      sendJson(exchange, 200, { input_tokens: estimateInputTokens(conversationOf(body)) });
    },
    async messages(raw, exchange) {
      const body = validateMessagesRequest(raw);
      const route = resolveFor(exchange, body.model);
      if (route.workspaceRequired) {
        throw invalidRequest(
          `model: '${body.model}' runs a CLI agent that needs a workspace, which the Messages API cannot name; use the OpenAI API with metadata.workspace`,
        );
      }
      // The conversation: `x-session-id`, else `metadata.user_id`.
      const requested = withCaller(messagesRun(body, deps.runs.base), exchange, body.metadata?.user_id);
      await serveMessage(deps, exchange, route, requested, body.stream === true, {
        id: messageId(),
        model: body.model,
      });
    },
  };
}

async function serveMessage(
  deps: MessagesHandlerDeps,
  exchange: AnthropicExchange,
  route: ResolvedRoute,
  requested: SurfaceRun,
  stream: boolean,
  context: MessageOutputContext,
): Promise<void> {
  // A non-streamed answer is written once the run ended: the node may fetch it whole from the backend.
  requested.spec.collect = !stream;
  const { request, response } = exchange;
  const signal = disconnectSignal(request.socket);
  const run = await deps.runs.start(route, requested, signal);
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
      deps.metrics.firstToken((performance.now() - exchange.arrivedAt) / 1000);
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
