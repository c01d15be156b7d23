// /v1/responses output: the Response object, whole (a non-streaming answer, a background response, a stored
// one) and inside stream events (responses-stream.ts writes those), and its output items.
import { randomId } from '../surface-kit/ids.js';
import type { ResponsesRequestBody } from './request-schemas.js';
import type { CollectedRun, FinishReason, OutputOptions, UsageTotals } from '../surface-kit/run-output.js';

export interface ResponsesOutputContext {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  model: string;
  request: ResponsesRequestBody;
  output: OutputOptions;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export type OutputItem =
  | { type: 'message'; id: string; text: string }
  | { type: 'reasoning'; id: string; text: string }
  | { type: 'function_call'; id: string; callId: string; name: string; arguments: string };

export function responseObject(
  context: ResponsesOutputContext,
  status: ResponseStatus,
  output: OutputItem[],
  usage: UsageTotals | null,
  error: { code: string; message: string } | null = null,
): Record<string, unknown> {
  const request = context.request;
  return {
    id: context.id,
    object: 'response',
    created_at: context.createdAt,
    status,
    background: false,
    error,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: context.model,
    output: output.map((item) => itemBody(item, status === 'in_progress' ? 'in_progress' : 'completed')),
    parallel_tool_calls: true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? (request.reasoning_effort || null), summary: null },
    store: request.store !== false,
    temperature: request.temperature ?? 1,
    text: { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    usage: usage ? responsesUsage(usage) : null,
  };
}

/** The non-streaming Response for a collected run. */
export function responsesBody(context: ResponsesOutputContext, run: CollectedRun): Record<string, unknown> {
  const items: OutputItem[] = [];
  if (run.reasoning) items.push({ type: 'reasoning', id: `rs_${randomId()}`, text: run.reasoning });
  if (run.text !== '' || run.toolCalls.length === 0)
    items.push({ type: 'message', id: `msg_${randomId()}`, text: run.text });
  for (const call of run.toolCalls) {
    items.push({
      type: 'function_call',
      id: `fc_${randomId()}`,
      callId: call.id,
      name: call.name,
      arguments: call.arguments,
    });
  }
  return responseObject(context, statusOf(run.finishReason), items, run.usage);
}

export function statusOf(finishReason: FinishReason): ResponseStatus {
  return finishReason === 'length' ? 'incomplete' : 'completed';
}

export function itemBody(item: OutputItem, status: 'in_progress' | 'completed'): Record<string, unknown> {
  switch (item.type) {
    case 'message':
      return {
        id: item.id,
        type: 'message',
        status,
        role: 'assistant',
        content: status === 'in_progress' && item.text === '' ? [] : [outputText(item.text)],
      };
    case 'reasoning':
      return {
        id: item.id,
        type: 'reasoning',
        summary: [],
        content: [{ type: 'reasoning_text', text: item.text }],
      };
    case 'function_call':
      return {
        id: item.id,
        type: 'function_call',
        status,
        call_id: item.callId,
        name: item.name,
        arguments: item.arguments,
      };
    default: {
      const unreachable: never = item;
      throw new Error(`unknown output item ${JSON.stringify(unreachable)}`);
    }
  }
}

export function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

function responsesUsage(usage: UsageTotals): Record<string, unknown> {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.totalTokens,
  };
}
