// The console's single error mapper: every failure of a console command becomes exactly one `error: ...` line.
import { isServiceError } from '../service/errors.js';

/** The line printed for a failed console command. */
export function describeConsoleError(error: unknown): string {
  if (isServiceError(error)) {
    if (error.code === 'node_error') return nodeReportedError(error.message);
    return `error: ${error.message}`;
  }
  return `error: ${error instanceof Error ? error.message : String(error)}`;
}

/** The line printed when a node answered a command with ok=false. */
export function nodeReportedError(message: string): string {
  return `error: node reported error: ${message || 'no error message given'}`;
}
