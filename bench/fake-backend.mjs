#!/usr/bin/env node
// The benchmark's fixed-latency backend as its own process (so its CPU is not the load generator's):
// prints `BACKEND_URL=<url>` once listening, stops on SIGTERM/SIGINT.
// Usage: fake-backend.mjs --latency-ms N [--port N] [--tokens N]
import { parseArgs } from 'node:util';
import { startFakeBackend } from './lib/fake-backend.mjs';

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '10' },
    port: { type: 'string', default: '0' },
    tokens: { type: 'string', default: '16' },
  },
});
const number = (name) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 0) {
    process.stderr.write(`--${name} must be a non-negative integer\n`);
    process.exit(2);
  }
  return value;
};
const backend = await startFakeBackend({
  latencyMs: number('latency-ms'),
  port: number('port'),
  defaultTokens: number('tokens'),
});
process.stdout.write(`BACKEND_URL=${backend.url}\n`);
const stop = () => void backend.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
