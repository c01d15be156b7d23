// `opencode run --format json`: lines `step_start`, `text` {part.text}, `tool_use` {part: tool state},
// `step_finish` {part.tokens, part.reason} and the session id on every line (`sessionID`), for `-s` resumes.
import type { OutputParser, ParsedOutput } from './parsed-output.js';
import {
  logPart,
  numberField,
  objectField,
  parseJsonLine,
  stringField,
  tokens,
  toolPart,
} from './json-line.js';

export function createOpencodeJsonParser(): OutputParser {
  return {
    line: (line): ParsedOutput => {
      const event = parseJsonLine(line);
      if (!event) return { parts: line.trim() ? [logPart(line)] : [] };
      const sessionId = stringField(event, 'sessionID');
      const parsed: ParsedOutput = { parts: [], ...(sessionId ? { backendSessionId: sessionId } : {}) };
      const part = objectField(event, 'part');
      switch (stringField(event, 'type') ?? '') {
        case 'text': {
          const text = stringField(part, 'text');
          if (text) parsed.parts.push({ type: 'text-delta', text });
          return parsed;
        }
        case 'tool_use': {
          const state = objectField(part, 'state');
          parsed.parts.push({
            type: 'tool-call',
            call: {
              id: stringField(part, 'callID') ?? stringField(part, 'id') ?? '',
              name: stringField(part, 'tool') ?? '',
              argumentsJson: JSON.stringify(objectField(state, 'input') ?? {}),
              index: 0,
            },
          });
          const output = stringField(state, 'output');
          if (output !== undefined) {
            parsed.parts.push(
              toolPart(output, {
                tool_call_id: stringField(part, 'callID') ?? '',
                status: stringField(state, 'status') ?? '',
              }),
            );
          }
          return parsed;
        }
        case 'step_finish': {
          const tokenInfo = objectField(part, 'tokens');
          const prompt = tokens(numberField(tokenInfo, 'input'));
          const completion = tokens(numberField(tokenInfo, 'output'));
          parsed.parts.push({
            type: 'usage',
            usage: {
              promptTokens: prompt,
              completionTokens: completion,
              totalTokens: prompt + completion,
              reasoningTokens: tokens(numberField(tokenInfo, 'reasoning')),
              cachedTokens: tokens(numberField(objectField(tokenInfo, 'cache'), 'read')),
              costUsd: numberField(part, 'cost') ?? 0,
            },
          });
          if (stringField(part, 'reason') === 'stop') parsed.final = true;
          return parsed;
        }
        case 'error': {
          const error = objectField(event, 'error');
          const message =
            stringField(objectField(error, 'data'), 'message') ??
            stringField(error, 'name') ??
            'opencode error';
          parsed.failure = { code: 'cli_error', message };
          return parsed;
        }
        default:
          return parsed;
      }
    },
    end: () => ({ parts: [] }),
  };
}
