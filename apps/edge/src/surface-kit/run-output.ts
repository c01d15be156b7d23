// Shared pieces of turning run parts into OpenAI output: tool-call identity, finish reasons, usage, and the
// collected result of a whole run (non-streaming responses and strict_stream_buffer).
import type { RunEventPart, ToolCall, Usage } from '@iop/wire';
import { runFailed } from './surface-error.js';
import { randomId } from './ids.js';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';
const FINISH_REASONS = new Set<string>(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']);

export function finishReasonOf(reported: string, sawToolCalls: boolean): FinishReason {
  if (FINISH_REASONS.has(reported)) return reported as FinishReason;
  return sawToolCalls ? 'tool_calls' : 'stop';
}

export interface OutputToolCall {
  /** Position among this response's tool calls (the OpenAI `index`). */
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/**
 * Gives each tool call a stable index and id. Adapters may repeat an id to continue a call's arguments, or send
 * calls without ids (then each part is a new call).
 */
export class ToolCallTracker {
  /** Calls by id, made with the first call that has one (most runs have no tool calls: no Map per run). */
  private byId: Map<string, OutputToolCall> | undefined;
  readonly calls: OutputToolCall[] = [];

  /** Returns the call and whether this part started it. */
  add(call: ToolCall): { call: OutputToolCall; isNew: boolean; argumentsDelta: string } {
    const existing = call.id ? this.byId?.get(call.id) : undefined;
    if (existing) {
      existing.arguments += call.argumentsJson;
      if (!existing.name && call.name) existing.name = call.name;
      return { call: existing, isNew: false, argumentsDelta: call.argumentsJson };
    }
    const created: OutputToolCall = {
      index: this.calls.length,
      id: call.id || `call_${randomId()}`,
      name: call.name,
      arguments: call.argumentsJson,
    };
    this.calls.push(created);
    if (call.id) (this.byId ??= new Map()).set(call.id, created);
    return { call: created, isNew: true, argumentsDelta: call.argumentsJson };
  }
}

export interface UsageTotals {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
}

export function usageTotals(usage: Usage | undefined): UsageTotals {
  const promptTokens = usage?.promptTokens ?? 0;
  const completionTokens = usage?.completionTokens ?? 0;
  return {
    promptTokens,
    completionTokens,
    totalTokens: usage?.totalTokens || promptTokens + completionTokens,
    reasoningTokens: usage?.reasoningTokens ?? 0,
    cachedTokens: usage?.cachedTokens ?? 0,
  };
}

export interface CollectedRun {
  text: string;
  reasoning: string;
  toolCalls: OutputToolCall[];
  usage: UsageTotals;
  finishReason: FinishReason;
}

export interface OutputOptions {
  /** Reasoning is returned as reasoning (reasoning_content / reasoning item). */
  includeReasoning: boolean;
  /** Non-strict output: reasoning that was not asked for is inlined into the text as a <think> block. */
  inlineReasoning: boolean;
}

/**
 * Accumulates a run's parts into its collected result, one part at a time: `collectRun` feeds it from an async
 * iterable, `StartedRun.collect` straight from the run's event stream (no promise per part).
 */
export class RunCollector {
  private text = '';
  private reasoning = '';
  private usage: Usage | undefined;
  private readonly tools = new ToolCallTracker();
  private outcome: { result: CollectedRun } | { error: Error } | undefined;

  constructor(private readonly options: OutputOptions) {}

  /** Takes one part; true once the run's terminal part was taken (later parts are ignored). Never throws. */
  add(part: RunEventPart): boolean {
    if (this.outcome) return true;
    switch (part.type) {
      case 'text-delta':
        this.text += part.text;
        return false;
      case 'reasoning-delta':
        this.reasoning += part.text;
        return false;
      case 'tool-call':
        this.tools.add(part.call);
        return false;
      case 'usage':
        this.usage = part.usage;
        return false;
      case 'start':
      case 'progress':
      case 'embeddings':
        return false;
      case 'complete': {
        const { includeReasoning, inlineReasoning } = this.options;
        const calls = this.tools.calls;
        this.outcome = {
          result: {
            text:
              inlineReasoning && !includeReasoning && this.reasoning
                ? `<think>${this.reasoning}</think>${this.text}`
                : this.text,
            reasoning: includeReasoning ? this.reasoning : '',
            toolCalls: calls,
            usage: usageTotals(this.usage),
            finishReason: finishReasonOf(part.finishReason, calls.length > 0),
          },
        };
        return true;
      }
      case 'error':
        this.outcome = { error: runFailed(part.code, part.message) };
        return true;
      case 'cancelled':
        this.outcome = { error: runFailed('run_cancelled', `The run was cancelled: ${part.reason}`) };
        return true;
      default: {
        const unreachable: never = part;
        this.outcome = { error: new Error(`unknown run part ${JSON.stringify(unreachable)}`) };
        return true;
      }
    }
  }

  /** The collected run; throws the run's failure, or `run_incomplete` when no terminal part came (aborted). */
  result(): CollectedRun {
    const outcome = this.outcome;
    // The parts ended without a terminal part: the caller aborted.
    if (!outcome) throw runFailed('run_incomplete', 'The run ended without a result');
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  }
}

/** Reads a run to its end; an error or cancelled part throws the matching OpenAIHttpError. */
export async function collectRun(
  parts: AsyncIterable<RunEventPart>,
  options: OutputOptions,
): Promise<CollectedRun> {
  const collector = new RunCollector(options);
  for await (const part of parts) {
    if (collector.add(part)) break;
  }
  return collector.result();
}

/** Buffers a whole run (strict_stream_buffer), throwing before anything is sent if it fails. */
export async function bufferRun(parts: AsyncIterable<RunEventPart>): Promise<RunEventPart[]> {
  const buffered: RunEventPart[] = [];
  for await (const part of parts) {
    if (part.type === 'error') throw runFailed(part.code, part.message);
    if (part.type === 'cancelled') throw runFailed('run_cancelled', `The run was cancelled: ${part.reason}`);
    buffered.push(part);
  }
  if (buffered[buffered.length - 1]?.type !== 'complete') {
    throw runFailed('run_incomplete', 'The run ended without a result');
  }
  return buffered;
}
