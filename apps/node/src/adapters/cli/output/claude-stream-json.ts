// `claude -p --output-format stream-json --verbose`: `system/init` (session id), `assistant` messages (text and
// tool_use blocks), `user` messages (tool results), `stream_event` deltas with --include-partial-messages,
// `rate_limit_event` (subscription limits) and the final `result` (text, usage, cost, is_error).
import type { RunEventPart } from '@iop/wire';
import type { OutputParser, ParsedOutput } from './parsed-output.js';
import {
  arrayField,
  isObject,
  logPart,
  numberField,
  objectField,
  parseJsonLine,
  stringField,
  tokens,
  toolPart,
} from './json-line.js';

export function createClaudeStreamJsonParser(): OutputParser {
  // With partial messages the text arrives as deltas first; the full assistant message must not repeat it.
  const streamedMessages = new Set<string>();
  let streamingMessage: string | undefined;
  return {
    line: (line): ParsedOutput => {
      const event = parseJsonLine(line);
      if (!event) return { parts: line.trim() ? [logPart(line)] : [] };
      const sessionId = stringField(event, 'session_id');
      const base: ParsedOutput = { parts: [], ...(sessionId ? { backendSessionId: sessionId } : {}) };
      switch (stringField(event, 'type') ?? '') {
        case 'stream_event': {
          const inner = objectField(event, 'event');
          const innerType = stringField(inner, 'type');
          if (innerType === 'message_start') {
            streamingMessage = stringField(objectField(inner, 'message'), 'id');
          } else if (innerType === 'content_block_delta') {
            const delta = objectField(inner, 'delta');
            const deltaType = stringField(delta, 'type');
            const text = stringField(delta, deltaType === 'thinking_delta' ? 'thinking' : 'text');
            if (text && deltaType === 'text_delta') base.parts.push({ type: 'text-delta', text });
            if (text && deltaType === 'thinking_delta') base.parts.push({ type: 'reasoning-delta', text });
            if (streamingMessage && text) streamedMessages.add(streamingMessage);
          }
          return base;
        }
        case 'assistant': {
          const message = objectField(event, 'message');
          const messageId = stringField(message, 'id');
          const alreadyStreamed = messageId !== undefined && streamedMessages.has(messageId);
          for (const block of arrayField(message, 'content')) {
            const blockType = stringField(block, 'type');
            if (blockType === 'text' && !alreadyStreamed) {
              const text = stringField(block, 'text');
              if (text) base.parts.push({ type: 'text-delta', text });
            } else if (blockType === 'thinking' && !alreadyStreamed) {
              const text = stringField(block, 'thinking');
              if (text) base.parts.push({ type: 'reasoning-delta', text });
            } else if (blockType === 'tool_use') {
              base.parts.push(toolCall(block));
            }
          }
          return base;
        }
        case 'user': {
          const message = objectField(event, 'message');
          for (const block of arrayField(message, 'content')) {
            if (stringField(block, 'type') !== 'tool_result') continue;
            base.parts.push(
              toolPart(toolResultText(block), {
                tool_call_id: stringField(block, 'tool_use_id') ?? '',
                is_error: String(isObject(block) && block.is_error === true),
              }),
            );
          }
          return base;
        }
        case 'rate_limit_event': {
          const info = objectField(event, 'rate_limit_info');
          if (info) base.rateLimit = info;
          return base;
        }
        case 'result': {
          base.final = true;
          base.parts.push({ type: 'usage', usage: resultUsage(event) });
          if (event.is_error === true || (stringField(event, 'subtype') ?? 'success') !== 'success') {
            const detail = stringField(event, 'result') ?? arrayField(event, 'errors').map(String).join('; ');
            base.failure = {
              code: 'cli_error',
              message: `claude reported ${stringField(event, 'subtype') ?? 'an error'}${detail ? `: ${detail}` : ''}`,
            };
          }
          return base;
        }
        default:
          return base;
      }
    },
    end: () => ({ parts: [] }),
  };
}

function toolCall(block: unknown): RunEventPart {
  const input = isObject(block) ? block.input : undefined;
  return {
    type: 'tool-call',
    call: {
      id: stringField(block, 'id') ?? '',
      name: stringField(block, 'name') ?? '',
      argumentsJson: JSON.stringify(input ?? {}),
      index: 0,
    },
  };
}

function toolResultText(block: unknown): string {
  if (!isObject(block)) return '';
  const content = block.content;
  if (typeof content === 'string') return content;
  return arrayField(block, 'content')
    .map((item) => stringField(item, 'text') ?? '')
    .join('');
}

function resultUsage(event: Record<string, unknown>) {
  const usage = objectField(event, 'usage');
  const input = tokens(numberField(usage, 'input_tokens'));
  const cacheRead = tokens(numberField(usage, 'cache_read_input_tokens'));
  const cacheCreation = tokens(numberField(usage, 'cache_creation_input_tokens'));
  const output = tokens(numberField(usage, 'output_tokens'));
  const prompt = input + cacheRead + cacheCreation;
  return {
    promptTokens: prompt,
    completionTokens: output,
    totalTokens: prompt + output,
    reasoningTokens: 0,
    cachedTokens: cacheRead,
    costUsd: numberField(event, 'total_cost_usd') ?? 0,
  };
}
