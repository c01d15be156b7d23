#!/usr/bin/env node
// Runs the agent model server (packages/testkit/src/agent-model-server) as a process for recordings and the
// real-CLI e2e script: prints `AGENT_MODEL_SERVER_URL=<url>` once listening, stops on SIGTERM/SIGINT.
// Needs the built testkit (`pnpm --filter @iop/testkit build`). Usage: agent-model-server.mjs [--port N] [--verbose]
import { startAgentModelServer } from '../dist/agent-model-server/agent-model-server.js';

const portIndex = process.argv.indexOf('--port');
const port = portIndex >= 0 ? Number(process.argv[portIndex + 1]) : 0;
const verbose = process.argv.includes('--verbose');
const server = await startAgentModelServer({
  port,
  log: verbose ? (line) => process.stderr.write(`${line}\n`) : undefined,
});
process.stdout.write(`AGENT_MODEL_SERVER_URL=${server.url}\n`);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
