// Plain-text output: every stdout line is text. `antigravity-print` is text too, but also picks up the
// conversation id agy prints (`conversation_id: …`, `Conversation ID: …`, or a JSON line with the id), so the
// next run of the session can pass `--conversation {conversation_id}`.
import type { OutputParser, ParsedOutput } from './parsed-output.js';
import { parseJsonLine, stringField } from './json-line.js';

export function createTextParser(): OutputParser {
  return {
    line: (line) => ({ parts: [{ type: 'text-delta', text: `${line}\n` }] }),
    end: () => ({ parts: [] }),
  };
}

const CONVERSATION_LINE = /^\s*(?:conversation[ _-]?id|conversation)\s*[:=]\s*([A-Za-z0-9._:-]+)\s*$/i;

export function createAntigravityPrintParser(): OutputParser {
  return {
    line: (line): ParsedOutput => {
      const json = parseJsonLine(line);
      if (json) {
        const id =
          stringField(json, 'conversation_id') ??
          stringField(json, 'conversationId') ??
          stringField(json, 'session_id');
        const text =
          stringField(json, 'text') ?? stringField(json, 'result') ?? stringField(json, 'response');
        return {
          parts: text ? [{ type: 'text-delta', text: text.endsWith('\n') ? text : `${text}\n` }] : [],
          ...(id ? { backendSessionId: id } : {}),
        };
      }
      const match = CONVERSATION_LINE.exec(line);
      if (match?.[1]) return { parts: [], backendSessionId: match[1] };
      return { parts: [{ type: 'text-delta', text: `${line}\n` }] };
    },
    end: () => ({ parts: [] }),
  };
}
