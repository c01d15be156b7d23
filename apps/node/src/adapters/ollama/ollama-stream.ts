// Reads Ollama's `/api/chat` NDJSON stream into run parts: `message.content` → text-delta, `message.thinking`
// → reasoning-delta, `message.tool_calls` → one tool-call part per call (Ollama sends each call whole), the
// `done` line → usage (prompt_eval_count / eval_count) and the finish reason. An `{"error":...}` line is the
// server failing mid-stream; a stream that ends without `done` lost its connection.
import { create, type RunEventPart } from '@iop/wire';

import { errorMessageFromEvent } from '../http/error-body.js';
import { UpstreamError } from '../http/upstream-error.js';

interface OllamaChatLine {
  message?: {
    content?: unknown;
    thinking?: unknown;
    tool_calls?: unknown;
  };
  done?: unknown;
  done_reason?: unknown;
  prompt_eval_count?: unknown;
  eval_count?: unknown;
}

function asCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

/** Finish reasons in OpenAI terms: tool calls win over "stop"; "length" is a num_predict cut. */
function finishReason(doneReason: unknown, sawToolCalls: boolean): string {
  if (doneReason === 'length') return 'length';
  if (sawToolCalls) return 'tool_calls';
  return typeof doneReason === 'string' && doneReason !== '' ? doneReason : 'stop';
}

export async function* ollamaChatParts(
  lines: AsyncIterable<unknown>,
  runId: string,
): AsyncGenerator<RunEventPart, string, undefined> {
  let callIndex = 0;
  for await (const value of lines) {
    const failure = errorMessageFromEvent(value);
    if (failure !== undefined) throw new UpstreamError('upstream_error', failure, { retryable: false });
    if (typeof value !== 'object' || value === null) continue;
    const line = value as OllamaChatLine;
    const message = line.message;
    if (message) {
      if (typeof message.thinking === 'string' && message.thinking !== '') {
        yield { type: 'reasoning-delta', text: message.thinking };
      }
      if (typeof message.content === 'string' && message.content !== '') {
        yield { type: 'text-delta', text: message.content };
      }
      if (Array.isArray(message.tool_calls)) {
        for (const raw of message.tool_calls as unknown[]) {
          const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
          const args = call.function?.arguments;
          const index = callIndex++;
          yield {
            type: 'tool-call',
            call: create.toolCall({
              id: typeof call.id === 'string' && call.id !== '' ? call.id : `call_${runId}_${index}`,
              name: typeof call.function?.name === 'string' ? call.function.name : '',
              argumentsJson: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
              index,
            }),
          };
        }
      }
    }
    if (line.done === true) {
      const promptTokens = asCount(line.prompt_eval_count);
      const completionTokens = asCount(line.eval_count);
      yield {
        type: 'usage',
        usage: create.usage({ promptTokens, completionTokens, totalTokens: promptTokens + completionTokens }),
      };
      return finishReason(line.done_reason, callIndex > 0);
    }
  }
  throw new UpstreamError('upstream_error', 'upstream stream ended before the final "done" line', {
    retryable: true,
  });
}
