// The node agent's CLI command shape (the same small framework as iop-edge's, from @iop/cli-kit): one file per
// command, registered in commands.ts; commands return an exit code and never call process.exit.
import type { CliCommand as KitCliCommand } from '@iop/cli-kit';

// Everything but CliCommand, which this file binds to its CliIo (a local export wins over `export *`).
export * from '@iop/cli-kit';

/** Subscribes to SIGINT/SIGTERM; returns the unsubscribe function. Injected so tests can signal in-process. */
export type SignalSource = (handler: (signal: NodeJS.Signals) => void) => () => void;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  onSignal: SignalSource;
}

export type CliCommand = KitCliCommand<CliIo>;
