// Child-process entry for the cross-process e2e tests: the real `iop-edge serve` command (config loading, JSON
// logger on stderr, listening lines on stdout, SIGTERM/SIGINT shutdown) with an explicit surface list, so the
// suites do not depend on which surfaces `defaultSurfaces` lists at the moment: metrics first (shared
// EdgeMetrics), then the OpenAI API, config refresh and the admin gRPC API. Run through the TypeScript hooks
// (apps/node/test/support/register-ts.mjs) so no build output is needed.
import { createAdminSurface } from '../../src/admin/admin-server.js';
import { runCli } from '../../src/cli/run-cli.js';
import { createServeCommand } from '../../src/cli/serve.js';
import { createMetricsSurface } from '../../src/metrics/metrics-surface.js';
import { createOpenAISurface } from '../../src/openai/openai-surface.js';
import { createRefreshSurface } from '../../src/refresh/refresh-surface.js';
import type { SurfaceFactory } from '../../src/surface.js';

const surfaces: SurfaceFactory[] = [
  createMetricsSurface(),
  (context) => createOpenAISurface(context, { closeGraceMs: 200 }),
  createRefreshSurface({ nodeTimeoutMs: 2000 }),
  createAdminSurface({ closeGraceMs: 200 }),
];

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
