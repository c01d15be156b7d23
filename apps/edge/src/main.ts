#!/usr/bin/env node
// iop-edge entry point: wiring only.
import { runCli } from './cli/run-cli.js';

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  execPath: process.env['IOP_EDGE_EXEC_PATH'] ?? process.argv[1] ?? process.execPath,
});
process.exitCode = code;
