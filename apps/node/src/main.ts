#!/usr/bin/env node
// iop-node entry point: wiring only. A first SIGINT/SIGTERM starts a clean shutdown; a second one exits at once.
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

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  onSignal,
});
process.exitCode = code;
