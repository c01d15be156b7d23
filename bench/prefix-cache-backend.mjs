#!/usr/bin/env node
// `--count` prefix-cache fake backends (bench/lib/prefix-cache-backend.mjs) in one process, each on its own port
// (so their timers do not share the load generator's event loop): prints `PREFIX_BACKENDS=<url>,<url>,...` once
// all listen, stops on SIGTERM/SIGINT.
// Usage: prefix-cache-backend.mjs [--count N] [--base-ms N] [--ms-per-token N] [--capacity-tokens N]
//   [--answer-tokens N] [--token-interval-ms N]
import { parseArgs } from 'node:util';
import { startPrefixCacheBackend } from './lib/prefix-cache-backend.mjs';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '4' },
    'base-ms': { type: 'string', default: '5' },
    'ms-per-token': { type: 'string', default: '0.2' },
    'capacity-tokens': { type: 'string', default: '200000' },
    'answer-tokens': { type: 'string', default: '24' },
    'token-interval-ms': { type: 'string', default: '1' },
  },
});
const number = (name, integer) => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    process.stderr.write(`--${name} must be a non-negative ${integer ? 'integer' : 'number'}\n`);
    process.exit(2);
  }
  return value;
};
const count = number('count', true);
if (count < 1) {
  process.stderr.write('--count must be at least 1\n');
  process.exit(2);
}
const backends = [];
for (let index = 0; index < count; index += 1) {
  backends.push(
    await startPrefixCacheBackend({
      name: `p${index}`,
      firstTokenBaseMs: number('base-ms'),
      msPerUnseenToken: number('ms-per-token'),
      capacityTokens: number('capacity-tokens', true),
      answerTokens: number('answer-tokens', true),
      tokenIntervalMs: number('token-interval-ms'),
    }),
  );
}
process.stdout.write(`PREFIX_BACKENDS=${backends.map((backend) => backend.url).join(',')}\n`);
const stop = () => void Promise.all(backends.map((backend) => backend.close())).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
