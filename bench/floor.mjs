#!/usr/bin/env node
// What two hops cost on this machine at the least: the same client measures, in alternating rounds, the direct
// path, one and two `bench/plain-relay.mjs` processes (an HTTP relay with no parsing or bookkeeping at all) and
// the IOP path (edge + node, two processes as well). Reported per path: TTFT p50 of sequential streams and the
// p50/p99 of non-streaming requests at a fixed open-loop rate, and what each adds to direct. The gap between
// "2 relays" and "IOP" is what IOP's own work costs; "2 relays" minus direct is the floor any two-process
// relay pays here (process wake-ups and loopback hops), which no change inside IOP can remove.
// Also per path and round: the closed-loop maximum (64 connections, --throughput-seconds, 0 = skip), its ratio
// to direct, and the CPU ms per request the path's relaying processes spent (user + system from /proc), so the
// throughput any two-process relay can reach on this machine is measured, not assumed.
// Usage: node bench/floor.mjs [--rounds N] [--rate N] [--seconds N] [--throughput-seconds N] [--latency-ms N]
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fixedRate, maxThroughput, stream, summarize } from './lib/load.mjs';
import { cpuDuring, startProcess, stopAll } from './lib/processes.mjs';
import { startRelayChain } from './lib/relays.mjs';
import { MODEL, removeTempDirs, repoRoot, startIopPath, waitServing } from './lib/topology.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '4' },
    'throughput-seconds': { type: 'string', default: '5' },
    'latency-ms': { type: 'string', default: '10' },
  },
});
const rounds = Number(values.rounds);
const rate = Number(values.rate);
const durationMs = Number(values.seconds) * 1000;
const throughputS = Number(values['throughput-seconds']);

const chat = (extra) =>
  JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], ...extra });

async function ttftP50(baseUrl) {
  const values = [];
  for (let index = 0; index < 40; index += 1) {
    const result = await stream({
      url: `${baseUrl}/v1/chat/completions`,
      body: chat({ stream: true, max_tokens: 16 }),
    });
    values.push(result.ttftMs);
  }
  return summarize(values).p50;
}

try {
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', values['latency-ms']],
    ready: /BACKEND_URL=(\S+)/,
  });
  const { one: relayOne, two: relayTwo } = await startRelayChain(backend.match[1]);
  const iop = await startIopPath({ backendUrl: backend.match[1] });
  await waitServing(iop.openaiUrl);
  const paths = {
    direct: backend.match[1],
    '1 relay': relayOne.url,
    '2 relays': relayTwo.url,
    IOP: iop.openaiUrl,
  };
  // The processes that relay on each path (the backend is common to all and not counted).
  const relaysOf = {
    direct: {},
    '1 relay': { relayOne },
    '2 relays': { relayOne, relayTwo },
    IOP: { edge: iop.edge, node: iop.node },
  };
  // Every path warms up at the measured rate first (JIT compilation after a start is not the steady state; see
  // the warm-up in run.mjs).
  for (const url of Object.values(paths)) {
    await fixedRate({
      url: `${url}/v1/chat/completions`,
      body: chat({ max_tokens: 16 }),
      rate,
      durationMs: 8000,
    });
  }
  const results = Object.fromEntries(
    Object.keys(paths).map((name) => [name, { ttft: [], p50: [], p99: [], rps: [], cpu: [] }]),
  );
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, url] of Object.entries(paths)) {
      results[name].ttft.push(await ttftP50(url));
      const load = await fixedRate({
        url: `${url}/v1/chat/completions`,
        body: chat({ max_tokens: 16 }),
        rate,
        durationMs,
      });
      results[name].p50.push(load.p50);
      results[name].p99.push(load.p99);
      if (throughputS > 0) {
        const { result, spent } = await cpuDuring(relaysOf[name], () =>
          maxThroughput({
            url: `${url}/v1/chat/completions`,
            body: chat({ max_tokens: 16 }),
            connections: 64,
            durationS: throughputS,
          }),
        );
        const cpuMs = Object.values(spent).reduce((sum, ms) => sum + ms, 0);
        results[name].rps.push(result.requestsPerS);
        results[name].cpu.push(cpuMs / Math.max(1, result.total));
      }
    }
  }
  const median = (list) => summarize(list).p50;
  const direct = results.direct;
  const lines = [
    `floor: ${rounds} rounds, ${rate} req/s for ${durationMs / 1000} s per path and round, load average ${os
      .loadavg()[0]
      .toFixed(2)} (medians over rounds; added = path − direct)`,
    'path       TTFT p50 (added)     latency p50 (added)   latency p99 (added)   max req/s (ratio)     relay CPU ms/req',
  ];
  for (const [name, result] of Object.entries(results)) {
    const cell = (key) =>
      `${median(result[key]).toFixed(2)} (${(median(result[key]) - median(direct[key])).toFixed(2)})`.padEnd(
        22,
      );
    const throughputCells =
      throughputS > 0
        ? `${`${median(result.rps).toFixed(0)} (${(median(result.rps) / median(direct.rps)).toFixed(2)})`.padEnd(
            22,
          )}${median(result.cpu).toFixed(3)}`
        : '';
    lines.push(`${name.padEnd(11)}${cell('ttft')}${cell('p50')}${cell('p99')}${throughputCells}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await stopAll();
  await removeTempDirs();
}
