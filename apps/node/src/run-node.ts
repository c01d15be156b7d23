// The node agent's process body as a function: main.ts (ESM, top-level await) and the release bundle (a
// CommonJS single file run by the artifact's own Node runtime) both call it and set the exit code. A first
// SIGINT/SIGTERM starts a clean shutdown; a second one exits at once.
import { runCli } from './cli/run-cli.js';
import type { SignalSource } from './cli/command.js';

const onSignal: SignalSource = (handler) => {
  let received = 0;
  const listener = (signal: NodeJS.Signals) => {
    received += 1;
    if (received > 1) process.exit(130);
    handler(signal);
  };
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
};

/** Runs the node CLI with this process's argv and stdio; resolves to the exit code. */
export function run(): Promise<number> {
  return runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    onSignal,
  });
}
