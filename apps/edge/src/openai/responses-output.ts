// /v1/responses output: the Response object (non-streaming and inside stream events) and the streaming event
// sequence the official SDK's `responses.stream().finalResponse()` and the codex CLI accept:
// response.created → response.in_progress → per output item: output_item.added → (content_part.added →
// output_text.delta… → output_text.done → content_part.done | function_call_arguments.delta… → .done) →
// output_item.done → response.completed (or response.incomplete when the token limit stopped the run).
// A failure after the stream started sends response.failed and then an `error` event, and the stream ends.
import type { RunEventPart } from '@iop/wire';
import { runFailed } from '../surface-kit/surface-error.js';
import { errorDataObject } from './openai-error.js';
import { randomId } from '../surface-kit/ids.js';
import type { ResponsesRequestBody } from './request-schemas.js';
import { dispatchRunParts } from '../surface-kit/run-part-dispatch.js';
import {
  finishReasonOf,
  ToolCallTracker,
  usageTotals,
  type CollectedRun,
  type FinishReason,
  type OutputOptions,
  type UsageTotals,
} from '../surface-kit/run-output.js';
import type { SseSink } from '../surface-kit/sse-sink.js';

export interface ResponsesOutputContext {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  model: string;
  request: ResponsesRequestBody;
  output: OutputOptions;
}

type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

type OutputItem =
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
    previous_response_id: null,
    reasoning: { effort: request.reasoning?.effort ?? (request.reasoning_effort || null), summary: null },
    store: false,
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

function statusOf(finishReason: FinishReason): ResponseStatus {
  return finishReason === 'length' ? 'incomplete' : 'completed';
}

function itemBody(item: OutputItem, status: 'in_progress' | 'completed'): Record<string, unknown> {
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

function outputText(text: string): Record<string, unknown> {
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

interface OpenItem {
  item: OutputItem;
  outputIndex: number;
}

/** Streams a run as Responses events; throws before writing anything when the run fails first. */
export async function streamResponse(
  parts: AsyncIterable<RunEventPart>,
  sink: SseSink,
  context: ResponsesOutputContext,
): Promise<void> {
  let sequence = 0;
  const items: OutputItem[] = [];
  const tools = new ToolCallTracker();
  const callItems = new Map<string, OpenItem>();
  let message: OpenItem | undefined;
  let reasoning: OpenItem | undefined;
  let openCall: OpenItem | undefined;
  let thinkOpen = false;
  const { includeReasoning, inlineReasoning } = context.output;

  const send = async (type: string, body: string) => {
    if (sequence === 0) {
      const created = JSON.stringify(responseObject(context, 'in_progress', [], null));
      await sink.write(
        `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":${created}}\n\n`,
      );
      await sink.write(
        `event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":${created}}\n\n`,
      );
      sequence = 2;
    }
    await sink.write(`event: ${type}\ndata: {"type":"${type}","sequence_number":${sequence++},${body}}\n\n`);
  };
  const addItem = async (item: OutputItem): Promise<OpenItem> => {
    const open = { item, outputIndex: items.length };
    items.push(item);
    await send(
      'response.output_item.added',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(item, 'in_progress'))}`,
    );
    return open;
  };
  const where = (open: OpenItem) => `"item_id":"${open.item.id}","output_index":${open.outputIndex}`;

  const openMessage = async (): Promise<OpenItem> => {
    if (message) return message;
    await closeReasoning();
    await closeCall();
    message = await addItem({ type: 'message', id: `msg_${randomId()}`, text: '' });
    await send(
      'response.content_part.added',
      `${where(message)},"content_index":0,"part":${JSON.stringify(outputText(''))}`,
    );
    return message;
  };
  const appendText = async (text: string) => {
    const open = await openMessage();
    if (open.item.type === 'message') open.item.text += text;
    await send(
      'response.output_text.delta',
      `${where(open)},"content_index":0,"delta":${JSON.stringify(text)},"logprobs":[]`,
    );
  };
  const closeMessage = async () => {
    if (!message || message.item.type !== 'message') return;
    const open = message;
    message = undefined;
    const text = JSON.stringify(open.item.type === 'message' ? open.item.text : '');
    await send('response.output_text.done', `${where(open)},"content_index":0,"text":${text},"logprobs":[]`);
    await send(
      'response.content_part.done',
      `${where(open)},"content_index":0,"part":${JSON.stringify(outputText(open.item.type === 'message' ? open.item.text : ''))}`,
    );
    await send(
      'response.output_item.done',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(open.item, 'completed'))}`,
    );
  };
  const closeReasoning = async () => {
    if (!reasoning) return;
    const open = reasoning;
    reasoning = undefined;
    const text = open.item.type === 'reasoning' ? open.item.text : '';
    await send(
      'response.reasoning_text.done',
      `${where(open)},"content_index":0,"text":${JSON.stringify(text)}`,
    );
    await send(
      'response.content_part.done',
      `${where(open)},"content_index":0,"part":${JSON.stringify({ type: 'reasoning_text', text })}`,
    );
    await send(
      'response.output_item.done',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(open.item, 'completed'))}`,
    );
  };
  const closeCall = async () => {
    if (!openCall || openCall.item.type !== 'function_call') return;
    const open = openCall;
    openCall = undefined;
    const item = open.item as Extract<OutputItem, { type: 'function_call' }>;
    await send(
      'response.function_call_arguments.done',
      `${where(open)},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(item.arguments)}`,
    );
    await send(
      'response.output_item.done',
      `"output_index":${open.outputIndex},"item":${JSON.stringify(itemBody(item, 'completed'))}`,
    );
  };
  const closeThink = async () => {
    if (!thinkOpen) return;
    thinkOpen = false;
    await appendText('</think>');
  };

  return dispatchRunParts(parts, sink, {
    text: async (text) => {
      await closeThink();
      await appendText(text);
    },
    reasoning: async (text) => {
      if (includeReasoning) {
        if (!reasoning) {
          await closeMessage();
          await closeCall();
          reasoning = await addItem({ type: 'reasoning', id: `rs_${randomId()}`, text: '' });
          await send(
            'response.content_part.added',
            `${where(reasoning)},"content_index":0,"part":{"type":"reasoning_text","text":""}`,
          );
        }
        if (reasoning.item.type === 'reasoning') reasoning.item.text += text;
        await send(
          'response.reasoning_text.delta',
          `${where(reasoning)},"content_index":0,"delta":${JSON.stringify(text)}`,
        );
      } else if (inlineReasoning) {
        await appendText(thinkOpen ? text : `<think>${text}`);
        thinkOpen = true;
      }
    },
    toolCall: async (toolCall) => {
      await closeThink();
      const { call, isNew, argumentsDelta } = tools.add(toolCall);
      let open = callItems.get(call.id);
      if (isNew || !open) {
        await closeMessage();
        await closeReasoning();
        await closeCall();
        open = await addItem({
          type: 'function_call',
          id: `fc_${randomId()}`,
          callId: call.id,
          name: call.name,
          arguments: '',
        });
        callItems.set(call.id, open);
        openCall = open;
      }
      if (open.item.type === 'function_call') open.item.arguments += argumentsDelta;
      if (argumentsDelta !== '') {
        await send(
          'response.function_call_arguments.delta',
          `${where(open)},"delta":${JSON.stringify(argumentsDelta)}`,
        );
      }
    },
    complete: async (finishReason, usage) => {
      await closeThink();
      if (items.length === 0) await openMessage();
      await closeReasoning();
      await closeMessage();
      await closeCall();
      const status = statusOf(finishReasonOf(finishReason, tools.calls.length > 0));
      const type = status === 'incomplete' ? 'response.incomplete' : 'response.completed';
      await send(
        type,
        `"response":${JSON.stringify(responseObject(context, status, items, usageTotals(usage)))}`,
      );
    },
    fail: async (code, errorMessage, usage) => {
      const error = runFailed(code, errorMessage);
      if (!sink.started) throw error;
      const failed = JSON.stringify(
        responseObject(context, 'failed', items, usage ? usageTotals(usage) : null, {
          code,
          message: errorMessage,
        }),
      );
      await send('response.failed', `"response":${failed}`);
      const body = errorDataObject(error);
      await send(
        'error',
        `"code":${JSON.stringify(code)},"message":${JSON.stringify(errorMessage)},"param":null,"error":${JSON.stringify(body.error)}`,
      );
    },
  });
}
