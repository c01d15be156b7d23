// `codex exec --json`: `thread.started` (thread id), `item.started` / `item.completed` for `agent_message`,
// `reasoning`, `command_execution` and other tool items, `error` items, then `turn.completed` with usage that is
// cumulative per thread (per-turn usage = difference to the previous turn, kept in the session's ParserState),
// or `turn.failed` / top-level `error`.
import type { Usage } from '@iop/wire';
import type { OutputParser, ParsedOutput, ParserState } from './parsed-output.js';
import {
  logPart,
  numberField,
  objectField,
  parseJsonLine,
  stringField,
  tokens,
  toolPart,
} from './json-line.js';

export function createCodexJsonParser(state: ParserState): OutputParser {
  let lastError: string | undefined;
  return {
    line: (line): ParsedOutput => {
      const event = parseJsonLine(line);
      if (!event) return { parts: line.trim() ? [logPart(line)] : [] };
      const parsed: ParsedOutput = { parts: [] };
      switch (stringField(event, 'type') ?? '') {
        case 'thread.started': {
          const threadId = stringField(event, 'thread_id');
          if (threadId) parsed.backendSessionId = threadId;
          return parsed;
        }
        case 'item.started': {
          const item = objectField(event, 'item');
          if (stringField(item, 'type') === 'command_execution') {
            parsed.parts.push({
              type: 'tool-call',
              call: {
                id: stringField(item, 'id') ?? '',
                name: 'exec_command',
                argumentsJson: JSON.stringify({ command: stringField(item, 'command') ?? '' }),
                index: 0,
              },
            });
          }
          return parsed;
        }
        case 'item.completed': {
          const item = objectField(event, 'item');
          switch (stringField(item, 'type') ?? '') {
            case 'agent_message': {
              const text = stringField(item, 'text');
              if (text) parsed.parts.push({ type: 'text-delta', text });
              break;
            }
            case 'reasoning': {
              const text = stringField(item, 'text');
              if (text) parsed.parts.push({ type: 'reasoning-delta', text });
              break;
            }
            case 'command_execution':
              parsed.parts.push(
                toolPart(stringField(item, 'aggregated_output') ?? '', {
                  tool_call_id: stringField(item, 'id') ?? '',
                  command: stringField(item, 'command') ?? '',
                  exit_code: String(numberField(item, 'exit_code') ?? ''),
                  status: stringField(item, 'status') ?? '',
                }),
              );
              break;
            case 'error': {
              // Non-fatal notices (e.g. unknown model metadata) arrive as error items; fatal ones as turn.failed.
              const message = stringField(item, 'message') ?? '';
              parsed.parts.push({ type: 'progress', kind: 'log', message, fields: { level: 'warning' } });
              break;
            }
            default:
              if (item) {
                parsed.parts.push(
                  toolPart(stringField(item, 'type') ?? 'item', { item_id: stringField(item, 'id') ?? '' }),
                );
              }
          }
          return parsed;
        }
        case 'turn.completed': {
          parsed.final = true;
          parsed.parts.push({ type: 'usage', usage: turnUsage(state, objectField(event, 'usage')) });
          return parsed;
        }
        case 'turn.failed': {
          const message = stringField(objectField(event, 'error'), 'message') ?? lastError ?? 'turn failed';
          parsed.final = true;
          parsed.failure = { code: 'cli_error', message: `codex turn failed: ${message}` };
          return parsed;
        }
        case 'error': {
          lastError = stringField(event, 'message');
          if (lastError)
            parsed.parts.push({
              type: 'progress',
              kind: 'log',
              message: lastError,
              fields: { level: 'error' },
            });
          return parsed;
        }
        default:
          return parsed;
      }
    },
    end: () => ({ parts: [] }),
  };
}

/** codex reports totals for the thread; the run's usage is the difference to the previous turn's totals. */
function turnUsage(state: ParserState, usage: Record<string, unknown> | undefined): Usage {
  const total = {
    promptTokens: tokens(numberField(usage, 'input_tokens')),
    completionTokens: tokens(numberField(usage, 'output_tokens')),
    reasoningTokens: tokens(numberField(usage, 'reasoning_output_tokens')),
    cachedTokens: tokens(numberField(usage, 'cached_input_tokens')),
  };
  const previous = state.cumulativeUsage;
  const difference = (now: number, before: number | undefined) =>
    before !== undefined && now >= before ? now - before : now;
  const turn = {
    promptTokens: difference(total.promptTokens, previous?.promptTokens),
    completionTokens: difference(total.completionTokens, previous?.completionTokens),
    reasoningTokens: difference(total.reasoningTokens, previous?.reasoningTokens),
    cachedTokens: difference(total.cachedTokens, previous?.cachedTokens),
  };
  state.cumulativeUsage = {
    ...total,
    totalTokens: total.promptTokens + total.completionTokens,
    costUsd: 0,
  };
  return { ...turn, totalTokens: turn.promptTokens + turn.completionTokens, costUsd: 0 };
}
