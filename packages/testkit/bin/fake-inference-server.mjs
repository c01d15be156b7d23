#!/usr/bin/env node
// Runs a fake inference server (packages/testkit/src/fake-ollama or fake-openai) as a process for the benchmark
// and manual end-to-end runs: prints `FAKE_OLLAMA_URL=<url>` or `FAKE_OPENAI_URL=<url>` once listening, stops on
// SIGTERM/SIGINT. Needs the built testkit (`pnpm --filter @iop/testkit build`).
// Usage: fake-inference-server.mjs ollama|openai [--port N] [--models a,b] [--tokens N] [--token-delay-ms N]
//        [--first-token-delay-ms N] [--reasoning TEXT]
import { startFakeOllama, startFakeOpenAI } from '../dist/index.js';

const [flavor, ...rest] = process.argv.slice(2);
if (flavor !== 'ollama' && flavor !== 'openai') {
  process.stderr.write(
    'usage: fake-inference-server.mjs ollama|openai [--port N] [--models a,b] [--tokens N] ' +
      '[--token-delay-ms N] [--first-token-delay-ms N] [--reasoning TEXT]\n',
  );
  process.exit(2);
}
const flags = new Map();
for (let index = 0; index < rest.length; index += 2) {
  const name = rest[index];
  const value = rest[index + 1];
  if (!name?.startsWith('--') || value === undefined) {
    process.stderr.write(`bad argument ${name ?? ''}: flags take a value (--name value)\n`);
    process.exit(2);
  }
  flags.set(name.slice(2), value);
}
const number = (name) => {
  if (!flags.has(name)) return undefined;
  const value = Number(flags.get(name));
  if (!Number.isFinite(value) || value < 0) {
    process.stderr.write(`--${name} must be a non-negative number\n`);
    process.exit(2);
  }
  return value;
};
const behavior = {};
if (flags.has('models')) behavior.models = flags.get('models').split(',').filter(Boolean);
if (flags.has('tokens')) behavior.tokenCount = number('tokens');
if (flags.has('token-delay-ms')) behavior.tokenDelayMs = number('token-delay-ms');
if (flags.has('first-token-delay-ms')) behavior.firstTokenDelayMs = number('first-token-delay-ms');
if (flags.has('reasoning')) behavior.reasoning = flags.get('reasoning');

const start = flavor === 'ollama' ? startFakeOllama : startFakeOpenAI;
const server = await start({ port: number('port') ?? 0, behavior });
process.stdout.write(`${flavor === 'ollama' ? 'FAKE_OLLAMA_URL' : 'FAKE_OPENAI_URL'}=${server.url}\n`);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
