// /v1/chat/completions output: the non-streaming body and the SSE chunk stream. Stream lines are built from a
// per-response prefix and suffix around the JSON-escaped delta, so a token costs one JSON.stringify of its text.
import type { RunEventPart, Usage } from '@iop/wire';
import { errorDataObject, runFailed } from './openai-error.js';
import {
  finishReasonOf,
  ToolCallTracker,
  usageTotals,
  type CollectedRun,
  type OutputOptions,
  type UsageTotals,
} from './run-output.js';
import type { SseSink } from './sse-sink.js';

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
  let usage: Usage | undefined;

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
  const fail = async (code: string, message: string) => {
    if (!sink.started) throw runFailed(code, message);
    await sink.write(`data: ${JSON.stringify(errorDataObject(runFailed(code, message)))}\n\n`);
  };

  for await (const part of parts) {
    if (sink.closed) return;
    switch (part.type) {
      case 'text-delta':
        if (part.text === '') break;
        await closeThink();
        await emit(`{"content":${JSON.stringify(part.text)}}`);
        break;
      case 'reasoning-delta':
        if (part.text === '') break;
        if (includeReasoning) await emit(`{"reasoning_content":${JSON.stringify(part.text)}}`);
        else if (inlineReasoning) {
          await emit(`{"content":${JSON.stringify(thinkOpen ? part.text : `<think>${part.text}`)}}`);
          thinkOpen = true;
        }
        break;
      case 'tool-call': {
        await closeThink();
        const { call, isNew, argumentsDelta } = tools.add(part.call);
        const entry = isNew
          ? {
              index: call.index,
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: argumentsDelta },
            }
          : { index: call.index, function: { arguments: argumentsDelta } };
        await emit(`{"tool_calls":[${JSON.stringify(entry)}]}`);
        break;
      }
      case 'usage':
        usage = part.usage;
        break;
      case 'start':
      case 'progress':
      case 'embeddings':
        break;
      case 'complete': {
        await closeThink();
        if (!roleSent) await emit('{"content":""}');
        const finish = finishReasonOf(part.finishReason, tools.calls.length > 0);
        await sink.write(`${head}{},"logprobs":null,"finish_reason":"${finish}"}]${usageField}}\n\n`);
        if (context.includeUsage) {
          const body = {
            id: context.id,
            object: 'chat.completion.chunk',
            created: context.created,
            model: context.model,
            choices: [],
            usage: chatUsage(usageTotals(usage)),
          };
          await sink.write(`data: ${JSON.stringify(body)}\n\n`);
        }
        await sink.write('data: [DONE]\n\n');
        return;
      }
      case 'error':
        await fail(part.code, part.message);
        return;
      case 'cancelled':
        await fail('run_cancelled', `The run was cancelled: ${part.reason}`);
        return;
      default: {
        const unreachable: never = part;
        throw new Error(`unknown run part ${JSON.stringify(unreachable)}`);
      }
    }
  }
}
