// Messages API output: the non-streamed message body from a collected run, and the SSE event stream from a run's
// parts (message_start, ping, content_block_start / _delta / _stop per thinking, text and tool_use block,
// message_delta with stop_reason and usage, message_stop; `error` for a failure after the stream started).
import { createHash } from 'node:crypto';
import type { RunEventPart } from '@iop/wire';
import { randomId } from '../surface-kit/ids.js';
import { runFailed } from '../surface-kit/surface-error.js';
import { dispatchRunParts } from '../surface-kit/run-part-dispatch.js';
import {
  finishReasonOf,
  ToolCallTracker,
  usageTotals,
  type CollectedRun,
  type FinishReason,
  type UsageTotals,
} from '../surface-kit/run-output.js';
import type { SseSink } from '../surface-kit/sse-sink.js';
import { AnthropicHttpError, mapAnthropicError } from './anthropic-error.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

export interface MessageOutputContext {
  id: string;
  model: string;
}

export function messageId(): string {
  return `msg_${randomId()}`;
}

export function stopReasonOf(finish: FinishReason): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    case 'stop':
      return 'end_turn';
    default: {
      const unreachable: never = finish;
      return unreachable;
    }
  }
}

/**
 * The thinking block's `signature`. Backends other than Anthropic's sign nothing: this is a digest of the
 * thinking text (so clients that require a non-empty signature work), not an attestation; it is ignored when
 * the block is sent back.
 */
export function thinkingSignature(thinking: string): string {
  return `iop1.${createHash('sha256').update(thinking).digest('base64url')}`;
}

/** Anthropic counts cached input apart from `input_tokens`. */
function messageUsage(usage: UsageTotals): Record<string, number> {
  return {
    input_tokens: Math.max(0, usage.promptTokens - usage.cachedTokens),
    output_tokens: usage.completionTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cachedTokens,
  };
}

/** A tool call's arguments as the `input` object; arguments that are not a JSON object fail the request. */
function toolInput(name: string, json: string): Record<string, unknown> {
  if (json.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new AnthropicHttpError(
      502,
      'api_error',
      `The backend's arguments for tool '${name}' are not JSON`,
      {},
      {
        cause: error,
      },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AnthropicHttpError(
      502,
      'api_error',
      `The backend's arguments for tool '${name}' are not an object`,
    );
  }
  return parsed as Record<string, unknown>;
}

export function messageBody(context: MessageOutputContext, run: CollectedRun): Record<string, unknown> {
  const content: Record<string, unknown>[] = [];
  if (run.reasoning !== '') {
    content.push({ type: 'thinking', thinking: run.reasoning, signature: thinkingSignature(run.reasoning) });
  }
  if (run.text !== '' || (run.toolCalls.length === 0 && content.length === 0)) {
    content.push({ type: 'text', text: run.text });
  }
  for (const call of run.toolCalls) {
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.name,
      input: toolInput(call.name, call.arguments),
    });
  }
  return {
    id: context.id,
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: stopReasonOf(run.finishReason),
    stop_sequence: null,
    usage: messageUsage(run.usage),
  };
}

function event(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** The block being streamed: its index and kind (tool_use: which call). */
type OpenBlock =
  | { kind: 'thinking'; index: number; text: string }
  | { kind: 'text'; index: number }
  | { kind: 'tool_use'; index: number; callIndex: number };

/**
 * Streams a run as Messages API events. Nothing is written before the run's first output, so a run that fails
 * first throws (the caller answers with an HTTP error); a failure after that is an `error` event.
 */
export async function streamMessage(
  parts: AsyncIterable<RunEventPart>,
  sink: SseSink,
  context: MessageOutputContext,
): Promise<void> {
  const tools = new ToolCallTracker();
  let started = false;
  let open: OpenBlock | undefined;
  let nextIndex = 0;

  const start = async () => {
    if (started) return;
    started = true;
    const message = {
      id: context.id,
      type: 'message',
      role: 'assistant',
      model: context.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // The backend reports its usage when the run ends: the totals arrive in message_delta.
      usage: {
        input_tokens: 0,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    };
    await sink.write(event('message_start', { message }) + event('ping', {}));
  };
  const close = async () => {
    if (!open) return;
    const block = open;
    open = undefined;
    let text = '';
    if (block.kind === 'thinking') {
      const delta = { type: 'signature_delta', signature: thinkingSignature(block.text) };
      text += event('content_block_delta', { index: block.index, delta });
    }
    await sink.write(text + event('content_block_stop', { index: block.index }));
  };
  const begin = async (block: OpenBlock, contentBlock: Record<string, unknown>) => {
    await start();
    await close();
    open = block;
    await sink.write(event('content_block_start', { index: block.index, content_block: contentBlock }));
  };
  const fail = async (error: unknown) => {
    if (!started) throw error;
    await sink.write(event('error', { error: mapAnthropicError(error).body.error }));
  };

  return dispatchRunParts(parts, sink, {
    reasoning: async (text) => {
      if (open?.kind !== 'thinking') {
        await begin(
          { kind: 'thinking', index: nextIndex++, text: '' },
          { type: 'thinking', thinking: '', signature: '' },
        );
      }
      const block = open as Extract<OpenBlock, { kind: 'thinking' }>;
      block.text += text;
      await sink.write(
        event('content_block_delta', {
          index: block.index,
          delta: { type: 'thinking_delta', thinking: text },
        }),
      );
    },
    text: async (text) => {
      if (open?.kind !== 'text') {
        await begin({ kind: 'text', index: nextIndex++ }, { type: 'text', text: '' });
      }
      await sink.write(
        event('content_block_delta', {
          index: (open as OpenBlock).index,
          delta: { type: 'text_delta', text },
        }),
      );
    },
    toolCall: async (toolCall) => {
      const { call, isNew, argumentsDelta } = tools.add(toolCall);
      if (isNew) {
        await begin(
          { kind: 'tool_use', index: nextIndex++, callIndex: call.index },
          { type: 'tool_use', id: call.id, name: call.name, input: {} },
        );
      } else if (open?.kind !== 'tool_use' || open.callIndex !== call.index) {
        // A block cannot be reopened once another one started.
        await fail(
          new AnthropicHttpError(
            502,
            'api_error',
            `The backend continued the arguments of tool call '${call.id}' after another block started`,
          ),
        );
        return 'stop';
      }
      if (argumentsDelta !== '') {
        await sink.write(
          event('content_block_delta', {
            index: (open as OpenBlock).index,
            delta: { type: 'input_json_delta', partial_json: argumentsDelta },
          }),
        );
      }
    },
    // A chat run never carries embeddings (they belong to POST /v1/embeddings): the dispatch skips them.
    complete: async (finishReason, usage) => {
      await start();
      if (nextIndex === 0) {
        // An empty answer is still one (empty) text block, as Anthropic sends it.
        await begin({ kind: 'text', index: 0 }, { type: 'text', text: '' });
      }
      await close();
      const stopReason = stopReasonOf(finishReasonOf(finishReason, tools.calls.length > 0));
      await sink.write(
        event('message_delta', {
          delta: { stop_reason: stopReason, stop_sequence: null },
          usage: messageUsage(usageTotals(usage)),
        }) + event('message_stop', {}),
      );
    },
    fail: (code, message) => fail(runFailed(code, message)),
  });
}
