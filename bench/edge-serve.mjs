#!/usr/bin/env node
// The benchmark's edge process: the real `iop-edge serve` command from the built edge (config loading, JSON
// logger, listening banner on stdout, SIGTERM shutdown) with an explicit surface list — metrics first (shared
// EdgeMetrics), then the OpenAI-compatible API — so the measurement does not depend on which surfaces
// `defaultSurfaces` lists. Usage: edge-serve.mjs serve --config FILE
import { runCli } from '../apps/edge/dist/cli/run-cli.js';
import { createServeCommand } from '../apps/edge/dist/cli/serve.js';
import { createMetricsSurface } from '../apps/edge/dist/metrics/metrics-surface.js';
import { createOpenAISurface } from '../apps/edge/dist/openai/openai-surface.js';

const surfaces = [createMetricsSurface(), (context) => createOpenAISurface(context, { closeGraceMs: 200 })];

process.exitCode = await runCli(
  process.argv.slice(2),
  {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    execPath: process.argv[1] ?? process.execPath,
  },
  [createServeCommand({ surfaces })],
);
