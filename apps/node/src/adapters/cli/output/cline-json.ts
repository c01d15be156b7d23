// `cline --json`: NDJSON with `hook_event` lines, `agent_event` lines ({event: {type: content_update | done |
// ...}}) and a final `run_result` {finishReason, usage, text}.
import type { OutputParser, ParsedOutput } from '../output-parser.js';
import { logPart, numberField, objectField, parseJsonLine, stringField, tokens } from './json-line.js';

export function createClineJsonParser(): OutputParser {
  return {
    line: (line): ParsedOutput => {
      const event = parseJsonLine(line);
      if (!event) return { parts: line.trim() ? [logPart(line)] : [] };
      const parsed: ParsedOutput = { parts: [] };
      switch (stringField(event, 'type') ?? '') {
        case 'agent_event': {
          const inner = objectField(event, 'event');
          if (stringField(inner, 'type') === 'content_update') {
            const text = stringField(inner, 'text') ?? stringField(objectField(inner, 'content'), 'text');
            if (text) parsed.parts.push({ type: 'text-delta', text });
          }
          return parsed;
        }
        case 'run_result': {
          parsed.final = true;
          const usage = objectField(event, 'usage');
          const prompt = tokens(numberField(usage, 'inputTokens') ?? numberField(usage, 'input_tokens'));
          const completion = tokens(
            numberField(usage, 'outputTokens') ?? numberField(usage, 'output_tokens'),
          );
          parsed.parts.push({
            type: 'usage',
            usage: {
              promptTokens: prompt,
              completionTokens: completion,
              totalTokens: prompt + completion,
              reasoningTokens: 0,
              cachedTokens: tokens(numberField(usage, 'cacheReadTokens')),
              costUsd: numberField(usage, 'totalCost') ?? numberField(usage, 'cost') ?? 0,
            },
          });
          const reason = stringField(event, 'finishReason') ?? '';
          if (reason === 'error')
            parsed.failure = { code: 'cli_error', message: stringField(event, 'text') ?? 'cline failed' };
          return parsed;
        }
        default:
          return parsed;
      }
    },
    end: () => ({ parts: [] }),
  };
}
