// The one bound on a line of text read from a backend (a CLI's stdout, an SSE or NDJSON stream): a line longer
// than this fails the read with LineTooLongError instead of filling the node's memory.
export const DEFAULT_MAX_LINE_LENGTH = 8 * 1024 * 1024;

export class LineTooLongError extends Error {
  override readonly name = 'LineTooLongError';

  constructor(readonly limit: number) {
    super(`an output line exceeded ${limit} characters`);
  }
}
