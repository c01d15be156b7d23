// Reads an OpenAI chat-completions SSE stream into run parts: `delta.content` → text-delta,
// `delta.reasoning_content` (vLLM) or `delta.reasoning` → reasoning-delta, `delta.tool_calls` → assembled into one
// tool-call part per call at the finish, the usage chunk → usage. A data object with an `error` key is the
// server failing mid-stream. The stream is complete at `[DONE]`, or at EOF once a finish_reason arrived.
import { create, type RunEventPart, type Usage } from '@iop/wire';

import { errorMessageFromEvent } from '../http/error-body.js';
import type { SseEvent } from '../http/sse-reader.js';
import { UpstreamError } from '../http/upstream-error.js';
import { ContentChunkTemplate, type DeltaTextField } from './content-chunk-template.js';
import { ToolCallAssembler, type ToolCallDelta } from './tool-call-assembler.js';

interface ChunkChoice {
  index?: unknown;
  delta?: {
    content?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
    tool_calls?: unknown;
  };
  finish_reason?: unknown;
}

interface Chunk {
  choices?: unknown;
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    total_tokens?: unknown;
    completion_tokens_details?: { reasoning_tokens?: unknown } | null;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  } | null;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

function usageOf(usage: NonNullable<Chunk['usage']>): Usage {
  const promptTokens = count(usage.prompt_tokens);
  const completionTokens = count(usage.completion_tokens);
  return create.usage({
    promptTokens,
    completionTokens,
    totalTokens: count(usage.total_tokens) || promptTokens + completionTokens,
    reasoningTokens: count(usage.completion_tokens_details?.reasoning_tokens),
    cachedTokens: count(usage.prompt_tokens_details?.cached_tokens),
  });
}

/**
 * Parts of a chat-completions SSE stream, read one upstream read (a batch of events) at a time. Consecutive
 * deltas of one kind within a read leave as one part with their concatenated text (one upstream read often
 * carries dozens of tokens): the run's consumer sees the same text in the same order of kinds, for a fraction of
 * the per-part cost. Parts of a read that ends in a failure are yielded before the failure is thrown.
 */
export async function* openAIChatParts(
  batches: AsyncIterable<readonly SseEvent[]>,
  runId: string,
  options: { fastPath?: boolean } = {},
): AsyncGenerator<RunEventPart, string, undefined> {
  const state: ChatStreamState = {
    calls: new ToolCallAssembler(),
    template: options.fastPath === false ? undefined : new ContentChunkTemplate(),
    runId,
    finishReason: undefined,
    usage: undefined,
    done: false,
  };
  for await (const events of batches) {
    const parts: RunEventPart[] = [];
    try {
      chatEventsParts(events, state, parts);
    } catch (error) {
      yield* parts;
      throw error;
    }
    yield* parts;
    if (state.done) break;
  }
  if (!state.done && state.finishReason === undefined) {
    throw new UpstreamError('upstream_error', 'upstream stream ended before a finish_reason or [DONE]', {
      retryable: true,
    });
  }
  const assembled = state.calls.size > 0;
  const rest: RunEventPart[] = [];
  flushCalls(state, rest);
  yield* rest;
  if (state.usage) yield { type: 'usage', usage: state.usage };
  return state.finishReason ?? (assembled ? 'tool_calls' : 'stop');
}

interface ChatStreamState {
  readonly calls: ToolCallAssembler;
  /** Reads plain content chunks without JSON.parse (see ContentChunkTemplate); undefined when turned off. */
  readonly template: ContentChunkTemplate | undefined;
  readonly runId: string;
  finishReason: string | undefined;
  usage: Usage | undefined;
  /** `[DONE]` was read: nothing after it counts. */
  done: boolean;
}

function flushCalls(state: ChatStreamState, parts: RunEventPart[]): void {
  for (const call of state.calls.drain((index) => `call_${state.runId}_${index}`))
    parts.push({ type: 'tool-call', call });
}

/** Appends a delta, joining it to the previous part when that is a delta of the same kind. */
function pushDelta(parts: RunEventPart[], type: 'text-delta' | 'reasoning-delta', text: string): void {
  const last = parts.length > 0 ? parts[parts.length - 1] : undefined;
  // The parts of a read are this function's own until they are yielded: extend the last one in place.
  if (last !== undefined && last.type === type) last.text += text;
  else parts.push({ type, text });
}

/**
 * The one text field of a chunk that carries nothing else the parts depend on (one choice at index 0 whose delta
 * has only `content`, `reasoning_content` or `reasoning`, no finish reason, no usage), or undefined. Only such
 * chunks teach the fast path its template.
 */
function plainDeltaField(usage: Chunk['usage'], choices: unknown[]): DeltaTextField | undefined {
  if (usage || choices.length !== 1) return undefined;
  const choice = choices[0] as ChunkChoice | null;
  if (typeof choice !== 'object' || choice === null) return undefined;
  if (choice.index !== undefined && choice.index !== 0) return undefined;
  if (choice.finish_reason !== undefined && choice.finish_reason !== null && choice.finish_reason !== '')
    return undefined;
  const delta = choice.delta;
  if (typeof delta !== 'object' || delta === null) return undefined;
  let field: DeltaTextField | undefined;
  for (const key in delta) {
    if (field !== undefined || (key !== 'content' && key !== 'reasoning_content' && key !== 'reasoning'))
      return undefined;
    field = key;
  }
  return field !== undefined && typeof delta[field] === 'string' ? field : undefined;
}

/** The parts of one read's events, appended to `parts`; stops at `[DONE]`. Throws UpstreamError. */
function chatEventsParts(events: readonly SseEvent[], state: ChatStreamState, parts: RunEventPart[]): void {
  for (const event of events) {
    const data = event.data.trim();
    if (data === '[DONE]') {
      state.done = true;
      return;
    }
    if (data === '') continue;
    const fast = state.template?.match(data);
    if (fast !== undefined) {
      if (fast !== '') pushDelta(parts, state.template?.type ?? 'text-delta', fast);
      continue;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data) as unknown;
    } catch (error) {
      throw new UpstreamError('upstream_error', `invalid SSE data from upstream: ${data.slice(0, 200)}`, {
        retryable: false,
        cause: error,
      });
    }
    const failure = errorMessageFromEvent(chunk);
    if (failure !== undefined) throw new UpstreamError('upstream_error', failure, { retryable: false });
    if (typeof chunk !== 'object' || chunk === null) continue;
    const { choices, usage: chunkUsage } = chunk as Chunk;
    if (chunkUsage) state.usage = usageOf(chunkUsage);
    if (!Array.isArray(choices)) continue;
    const field = state.template === undefined ? undefined : plainDeltaField(chunkUsage, choices);
    if (field !== undefined)
      state.template?.learn(data, field, (choices[0] as ChunkChoice).delta?.[field] as string);
    for (const raw of choices as unknown[]) {
      const choice = raw as ChunkChoice;
      // One run is one completion: only the first choice counts (n > 1 is never requested).
      if (choice.index !== undefined && choice.index !== 0) continue;
      const delta = choice.delta ?? {};
      const reasoning =
        typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') pushDelta(parts, 'reasoning-delta', reasoning);
      if (typeof delta.content === 'string' && delta.content !== '')
        pushDelta(parts, 'text-delta', delta.content);
      if (Array.isArray(delta.tool_calls))
        for (const call of delta.tool_calls as ToolCallDelta[]) state.calls.add(call);
      if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') {
        state.finishReason = choice.finish_reason;
        flushCalls(state, parts);
      }
    }
  }
}

interface CompletionBody {
  choices?: unknown;
  usage?: Chunk['usage'];
}

interface CompletionChoice {
  index?: unknown;
  message?: {
    content?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
    tool_calls?: unknown;
  };
  finish_reason?: unknown;
}

/**
 * Parts of a whole (non-streamed) chat completion. Some OpenAI-compatible servers ignore `stream: true` and
 * answer with one JSON body; the run then gets the same parts in one go.
 */
export function* openAICompletionParts(
  body: unknown,
  runId: string,
): Generator<RunEventPart, string, undefined> {
  const failure = errorMessageFromEvent(body);
  if (failure !== undefined) throw new UpstreamError('upstream_error', failure, { retryable: false });
  const completion = (typeof body === 'object' && body !== null ? body : {}) as CompletionBody;
  const choices = Array.isArray(completion.choices) ? (completion.choices as CompletionChoice[]) : [];
  const choice = choices.find((candidate) => candidate.index === undefined || candidate.index === 0);
  if (!choice)
    throw new UpstreamError('upstream_error', 'upstream completion has no choices', { retryable: false });
  const message = choice.message ?? {};
  const reasoning =
    typeof message.reasoning_content === 'string' ? message.reasoning_content : message.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '') yield { type: 'reasoning-delta', text: reasoning };
  if (typeof message.content === 'string' && message.content !== '')
    yield { type: 'text-delta', text: message.content };
  const calls = new ToolCallAssembler();
  if (Array.isArray(message.tool_calls)) {
    (message.tool_calls as ToolCallDelta[]).forEach((call, index) => calls.add({ ...call, index }));
  }
  const assembled = calls.size > 0;
  for (const call of calls.drain((index) => `call_${runId}_${index}`)) yield { type: 'tool-call', call };
  if (completion.usage) yield { type: 'usage', usage: usageOf(completion.usage) };
  if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') return choice.finish_reason;
  return assembled ? 'tool_calls' : 'stop';
}
