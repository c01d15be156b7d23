// What a CLI output parser answers per line, and the parser's interface: below the parsers of output/ and the
// format switch in output-parser.ts, so neither imports the other for them.
import type { RunEventPart, Usage } from '@iop/wire';

export interface ParsedOutput {
  parts: RunEventPart[];
  backendSessionId?: string;
  /** The CLI printed its final result for this run. */
  final?: boolean;
  /** The CLI reported that the run failed (the run ends with this error even if it exits 0). */
  failure?: { code: string; message: string };
  /** Usage-limit information (claude `rate_limit_event`), kept for the `status` command. */
  rateLimit?: Record<string, unknown>;
}

export interface OutputParser {
  line(line: string): ParsedOutput;
  /** The process exited: anything still buffered. */
  end(): ParsedOutput;
}

/** Per-session state a parser may keep across runs (codex reports cumulative usage per thread). */
export interface ParserState {
  cumulativeUsage?: Usage;
}
