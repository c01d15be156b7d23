// The shape of one CLI command, shared by iop-edge and iop-node: each app binds it to its own CliIo (the edge's
// carries stdin and the executable path, the node's a signal source) and keeps one file per command.

export interface CliCommand<Io> {
  /** Words that select the command, e.g. ['config', 'check']. */
  path: string[];
  summary: string;
  usage: string;
  /** Returns the process exit code. Commands never call process.exit themselves. */
  run(argv: string[], io: Io): Promise<number>;
}

/** Bad command-line input: the dispatcher prints the message with the command's usage and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function writeLine(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`);
}
