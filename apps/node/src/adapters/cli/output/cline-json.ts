// `cline --json`: NDJSON. `agent_event` lines carry {event: {type: content_start | content_update | content_end
// (contentType text | tool | reasoning), usage, error, done, iteration_*}}; the final line is `run_result`
// {finishReason, usage, text}. Text may arrive whole in content_start or in pieces (with `accumulated`), so the
// parser emits only what it has not emitted yet. With -y the answer is the `submit_and_exit` summary, reported in
// `done.text`, which becomes the text when nothing else was said. A top-level `error` line is fatal.
import type { OutputParser, ParsedOutput } from './parsed-output.js';
import {
  isObject,
  logPart,
  numberField,
  objectField,
  parseJsonLine,
  stringField,
  tokens,
  toolPart,
} from './json-line.js';

export function createClineJsonParser(): OutputParser {
  let emitted = '';
  let anyText = false;
  const emitText = (parsed: ParsedOutput, text: string | undefined, accumulated: string | undefined) => {
    const full = accumulated ?? (text !== undefined ? emitted + text : undefined);
    if (full === undefined) return;
    const fresh = full.startsWith(emitted) ? full.slice(emitted.length) : full;
    emitted = full;
    if (fresh) {
      anyText = true;
      parsed.parts.push({ type: 'text-delta', text: fresh });
    }
  };
  return {
    line: (line): ParsedOutput => {
      const event = parseJsonLine(line);
      if (!event) return { parts: line.trim() ? [logPart(line)] : [] };
      const parsed: ParsedOutput = { parts: [] };
      switch (stringField(event, 'type') ?? '') {
        case 'agent_event': {
          const inner = objectField(event, 'event');
          const contentType = stringField(inner, 'contentType');
          switch (stringField(inner, 'type') ?? '') {
            case 'content_start':
            case 'content_update':
              if (contentType === 'text') {
                emitText(parsed, stringField(inner, 'text'), stringField(inner, 'accumulated'));
              } else if (contentType === 'reasoning') {
                const text = stringField(inner, 'text');
                if (text) parsed.parts.push({ type: 'reasoning-delta', text });
              } else if (contentType === 'tool' && stringField(inner, 'type') === 'content_start') {
                parsed.parts.push({
                  type: 'tool-call',
                  call: {
                    id: stringField(inner, 'toolCallId') ?? '',
                    name: stringField(inner, 'toolName') ?? '',
                    argumentsJson: JSON.stringify(isObject(inner) ? (inner.input ?? {}) : {}),
                    index: 0,
                  },
                });
              }
              break;
            case 'content_end':
              if (contentType === 'text') {
                const text = stringField(inner, 'text');
                if (text !== undefined) emitText(parsed, undefined, text);
                // A new text block starts from scratch.
                emitted = '';
              } else if (contentType === 'tool') {
                const output = isObject(inner) ? inner.output : undefined;
                parsed.parts.push(
                  toolPart(typeof output === 'string' ? output : JSON.stringify(output ?? ''), {
                    tool_call_id: stringField(inner, 'toolCallId') ?? '',
                    tool: stringField(inner, 'toolName') ?? '',
                  }),
                );
              }
              break;
            case 'error': {
              // Recoverable: cline reports a failed tool call and goes on with the next iteration.
              const message = stringField(objectField(inner, 'error'), 'message') ?? 'cline error';
              parsed.parts.push({ type: 'progress', kind: 'log', message, fields: { level: 'error' } });
              break;
            }
            case 'done': {
              const text = stringField(inner, 'text');
              if (!anyText && text) {
                anyText = true;
                parsed.parts.push({ type: 'text-delta', text });
              }
              break;
            }
            default:
              break;
          }
          return parsed;
        }
        case 'run_result': {
          parsed.final = true;
          const usage = objectField(event, 'usage');
          const prompt = tokens(numberField(usage, 'inputTokens'));
          const completion = tokens(numberField(usage, 'outputTokens'));
          parsed.parts.push({
            type: 'usage',
            usage: {
              promptTokens: prompt,
              completionTokens: completion,
              totalTokens: prompt + completion,
              reasoningTokens: 0,
              cachedTokens: tokens(numberField(usage, 'cacheReadTokens')),
              costUsd: numberField(usage, 'totalCost') ?? 0,
            },
          });
          const reason = stringField(event, 'finishReason') ?? '';
          if (reason !== 'completed' && reason !== 'stop' && reason !== '') {
            parsed.failure = {
              code: 'cli_error',
              message: `cline finished with ${reason}: ${stringField(event, 'text') ?? ''}`,
            };
          }
          return parsed;
        }
        case 'error':
          parsed.failure = { code: 'cli_error', message: stringField(event, 'message') ?? 'cline error' };
          return parsed;
        default:
          return parsed;
      }
    },
    end: () => ({ parts: [] }),
  };
}
