// A CLI command: one file per command under cli/, registered in cli/commands.ts. The command shape, flag parsing
// and UsageError come from @iop/cli-kit (shared with iop-node); this file binds them to the edge's CliIo.
import type { CliCommand as KitCliCommand } from '@iop/cli-kit';

// Everything but CliCommand, which this file binds to its CliIo (a local export wins over `export *`).
export * from '@iop/cli-kit';

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Path of the running executable (SEA binary or bin/ launcher), for executable-adjacent lookups. */
  execPath: string;
}

export type CliCommand = KitCliCommand<CliIo>;
