// The edge process body as a function: main.ts (ESM, top-level await) and the release bundle (CommonJS single
// file inside the SEA executable, where top-level await is not available) both call it and set the exit code.
import { runCli } from './cli/run-cli.js';

/** Runs the edge CLI with this process's argv and stdio; resolves to the exit code. */
export function run(): Promise<number> {
  return runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    execPath: process.env['IOP_EDGE_EXEC_PATH'] ?? executablePath(),
  });
}

/**
 * The file the user ran: the SEA binary itself (argv[1] is then the first user argument, not a script), or the
 * script path when run as `node dist/main.js`.
 */
function executablePath(): string {
  if (isSingleExecutable()) return process.execPath;
  return process.argv[1] ?? process.execPath;
}

function isSingleExecutable(): boolean {
  try {
    const sea = process.getBuiltinModule?.('node:sea') as { isSea?: () => boolean } | undefined;
    return sea?.isSea?.() ?? false;
  } catch {
    return false;
  }
}
