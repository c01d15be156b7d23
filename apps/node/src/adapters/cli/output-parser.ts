// Output formats of one-shot CLIs. A parser reads stdout line by line and answers with run event parts plus
// what the session must remember (the CLI's conversation id), whether the final result was printed (for the
// result-grace watchdog), an error the CLI reported, and usage-limit information it saw.
import type { OutputFormat } from './cli-profile.js';
import { createClaudeStreamJsonParser } from './output/claude-stream-json.js';
import { createClineJsonParser } from './output/cline-json.js';
import { createCodexJsonParser } from './output/codex-json.js';
import { createOpencodeJsonParser } from './output/opencode-json.js';
import { createAntigravityPrintParser, createTextParser } from './output/text.js';
import type { OutputParser, ParserState } from './output/parsed-output.js';

export type { OutputParser, ParsedOutput, ParserState } from './output/parsed-output.js';

export function createOutputParser(format: OutputFormat, state: ParserState): OutputParser {
  switch (format) {
    case 'text':
      return createTextParser();
    case 'antigravity-print':
      return createAntigravityPrintParser();
    case 'claude-stream-json':
      return createClaudeStreamJsonParser();
    case 'codex-json':
      return createCodexJsonParser(state);
    case 'cline-json':
      return createClineJsonParser();
    case 'opencode-json':
      return createOpencodeJsonParser();
    default: {
      const unreachable: never = format;
      throw new Error(`unknown output format ${String(unreachable)}`);
    }
  }
}
