// /v1/chat/completions output: the non-streaming body and the SSE chunk stream. Stream lines are built from a
// per-response prefix and suffix around the JSON-escaped delta, so a token costs one JSON.stringify of its text.
import type { RunEventPart } from '@iop/wire';
import { endChunkStream, failChunkStream } from './chunk-stream-end.js';
import { dispatchRunParts } from '../surface-kit/run-part-dispatch.js';
import {
  finishReasonOf,
  ToolCallTracker,
  usageTotals,
  type CollectedRun,
  type OutputOptions,
  type UsageTotals,
} from '../surface-kit/run-output.js';
import type { SseSink } from '../surface-kit/sse-sink.js';

export interface ChatOutputContext {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  includeUsage: boolean;
  output: OutputOptions;
}

export function chatCompletionBody(context: ChatOutputContext, run: CollectedRun): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: run.text === '' && run.toolCalls.length > 0 ? null : run.text,
    refusal: null,
  };
  if (run.reasoning) message['reasoning_content'] = run.reasoning;
  if (run.toolCalls.length > 0) {
    message['tool_calls'] = run.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: context.id,
    object: 'chat.completion',
    created: context.created,
    model: context.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: run.finishReason }],
    usage: chatUsage(run.usage),
  };
}

function chatUsage(usage: UsageTotals): Record<string, unknown> {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

/**
 * Streams a run as chat.completion.chunk events. Throws (before anything is written) if the run fails first, so
 * the caller can answer with an HTTP error; a failure after output started becomes an SSE error object.
 */
export async function streamChatCompletion(
  parts: AsyncIterable<RunEventPart>,
  sink: SseSink,
  context: ChatOutputContext,
): Promise<void> {
  const head =
    `data: {"id":"${context.id}","object":"chat.completion.chunk","created":${context.created},` +
    `"model":${JSON.stringify(context.model)},"choices":[{"index":0,"delta":`;
  const usageField = context.includeUsage ? ',"usage":null' : '';
  const open = `,"logprobs":null,"finish_reason":null}]${usageField}}\n\n`;
  const { includeReasoning, inlineReasoning } = context.output;
  const tools = new ToolCallTracker();
  let roleSent = false;
  let thinkOpen = false;

  const emit = async (delta: string) => {
    if (!roleSent) {
      roleSent = true;
      await sink.write(`${head}{"role":"assistant","content":""}${open}`);
    }
    await sink.write(head + delta + open);
  };
  const closeThink = async () => {
    if (!thinkOpen) return;
    thinkOpen = false;
    await emit('{"content":"</think>"}');
  };

  return dispatchRunParts(parts, sink, {
    text: async (text) => {
      await closeThink();
      await emit(`{"content":${JSON.stringify(text)}}`);
    },
    reasoning: async (text) => {
      if (includeReasoning) await emit(`{"reasoning_content":${JSON.stringify(text)}}`);
      else if (inlineReasoning) {
        await emit(`{"content":${JSON.stringify(thinkOpen ? text : `<think>${text}`)}}`);
        thinkOpen = true;
      }
    },
    toolCall: async (toolCall) => {
      await closeThink();
      const { call, isNew, argumentsDelta } = tools.add(toolCall);
      const entry = isNew
        ? {
            index: call.index,
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: argumentsDelta },
          }
        : { index: call.index, function: { arguments: argumentsDelta } };
      await emit(`{"tool_calls":[${JSON.stringify(entry)}]}`);
    },
    complete: async (finishReason, usage) => {
      await closeThink();
      if (!roleSent) await emit('{"content":""}');
      const finish = finishReasonOf(finishReason, tools.calls.length > 0);
      await sink.write(`${head}{},"logprobs":null,"finish_reason":"${finish}"}]${usageField}}\n\n`);
      await endChunkStream(
        sink,
        { ...context, object: 'chat.completion.chunk' },
        chatUsage(usageTotals(usage)),
      );
    },
    fail: (code, message) => failChunkStream(sink, code, message),
  });
}
