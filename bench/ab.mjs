#!/usr/bin/env node
// A/B helper for hot-path changes: starts the IOP path (fake backend, edge, node from THIS checkout's dist) and
// reports the CPU each process spends per non-streaming request at a fixed closed-loop load, and per token of one
// long stream. CPU per unit of work is steadier than throughput on a shared machine (other processes change how
// much CPU we get, not how much a request costs). To compare two builds, run this script from each tree
// (e.g. a copy with the old apps/node/dist) alternately, a few times.
// With --rate N it also measures the CPU per request at a fixed open-loop rate of N req/s, which compares builds
// at the same load (closed-loop CPU per request changes with the throughput a busy machine allows).
// Usage: node bench/ab.mjs [--connections 16] [--seconds 6] [--tokens 50000] [--rate N] [--label NAME]
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fixedRate, maxThroughput, stream, summarize } from './lib/load.mjs';
import { cpuDuring, startProcess, stopAll } from './lib/processes.mjs';
import { MODEL, removeTempDirs, repoRoot, startIopPath, waitServing } from './lib/topology.mjs';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '6' },
    tokens: { type: 'string', default: '50000' },
    rate: { type: 'string' },
    label: { type: 'string', default: path.basename(repoRoot) },
  },
});

try {
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', '10'],
    ready: /BACKEND_URL=(\S+)/,
  });
  const iop = await startIopPath({ backendUrl: backend.match[1] });
  await waitServing(iop.openaiUrl);
  const url = `${iop.openaiUrl}/v1/chat/completions`;
  const pids = { backend: backend.pid, edge: iop.edge.pid, node: iop.node.pid };

  // Warm-up (JIT, pooled connections), not measured.
  await maxThroughput({
    url,
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 16 }),
    connections: Number(values.connections),
    durationS: 2,
  });
  const requests = await cpuDuring(pids, () =>
    maxThroughput({
      url,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 16 }),
      connections: Number(values.connections),
      durationS: Number(values.seconds),
    }),
  );
  const perRequest = (role) => (requests.spent[role] / Math.max(1, requests.result.total)).toFixed(2);
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  const fixed =
    rate === undefined
      ? undefined
      : await cpuDuring(pids, () =>
          fixedRate({
            url,
            body: JSON.stringify({
              model: MODEL,
              messages: [{ role: 'user', content: 'x' }],
              max_tokens: 16,
            }),
            rate,
            durationMs: Number(values.seconds) * 1000,
          }),
        );
  const perFixed = (role) => (fixed.spent[role] / Math.max(1, fixed.result.completed)).toFixed(3);
  const streamed = await cpuDuring(pids, () =>
    stream({
      url,
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        max_tokens: Number(values.tokens),
      }),
    }),
  );
  // Time to first token, IOP minus direct: medians of 30 sequential short streams through each.
  const ttftMedian = async (base) => {
    const values = [];
    for (let index = 0; index < 30; index += 1) {
      const result = await stream({
        url: `${base}/v1/chat/completions`,
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'x' }],
          stream: true,
          max_tokens: 16,
        }),
      });
      values.push(result.ttftMs);
    }
    return summarize(values).p50;
  };
  const ttftIop = await ttftMedian(iop.openaiUrl);
  const ttftDirect = await ttftMedian(backend.match[1]);
  const perToken = (role) => ((streamed.spent[role] * 1000) / Math.max(1, streamed.result.tokens)).toFixed(1);
  process.stdout.write(
    [
      `label ${values.label}  load average ${os.loadavg()[0].toFixed(1)}`,
      `requests: ${requests.result.requestsPerS.toFixed(0)} req/s (${requests.result.non2xx} non-2xx), ` +
        `CPU ms/request node ${perRequest('node')} edge ${perRequest('edge')} backend ${perRequest('backend')}`,
      ...(fixed
        ? [
            `fixed ${rate} req/s: ${fixed.result.completed} answered, ` +
              `CPU ms/request node ${perFixed('node')} edge ${perFixed('edge')} backend ${perFixed('backend')}`,
          ]
        : []),
      `stream: ${streamed.result.tokens} tokens, ${streamed.result.tokensPerS.toFixed(0)} tokens/s, ` +
        `CPU µs/token node ${perToken('node')} edge ${perToken('edge')}`,
      `TTFT p50: IOP ${ttftIop.toFixed(2)} ms, direct ${ttftDirect.toFixed(2)} ms, added ${(ttftIop - ttftDirect).toFixed(2)} ms`,
    ].join('\n') + '\n',
  );
} finally {
  await stopAll();
  await removeTempDirs();
}
