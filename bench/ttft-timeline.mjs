#!/usr/bin/env node
// The first token's path, hop by hop: starts the IOP path (backend, edge, node from this tree's build) with
// bench/lib/socket-trace.cjs preloaded in all three, warms up, then sends --streams sequential short streams
// (--idle-ms apart, so every process is asleep when one starts, as in the TTFT measure) and prints, per stream,
// the merged timeline of every process's socket reads and writes and the edge's HTTP request, relative to the
// client's start, up to the client's first token. What to read from it: edge request → first write to the node
// (the edge's inbound work), node read → write to the backend (the node's), backend token write → node read →
// node write (the node's outbound), edge read → write to the client (the edge's outbound); each gap between one
// process's write and the next one's read is a wake-up on loopback. The tracing itself adds a few µs per event.
// Usage: node bench/ttft-timeline.mjs [--streams 3] [--idle-ms 50]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stream } from './lib/load.mjs';
import { startProcess, stopAll } from './lib/processes.mjs';
import { MODEL, removeTempDirs, repoRoot, startIopPath, waitServing } from './lib/topology.mjs';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '3' },
    'idle-ms': { type: 'string', default: '50' },
  },
});
const trace = path.join(repoRoot, 'bench/lib/socket-trace.cjs');
const traceDir = await mkdtemp(path.join(os.tmpdir(), 'iop-ttft-'));
process.env.IOP_TRACE_DIR = traceDir;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const body = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'x' }],
  stream: true,
  max_tokens: 16,
});

try {
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    nodeOptions: ['--require', trace],
    args: ['--latency-ms', '10'],
    ready: /BACKEND_URL=(\S+)/,
  });
  const iop = await startIopPath({ backendUrl: backend.match[1], nodeOptions: ['--require', trace] });
  await waitServing(iop.openaiUrl);
  const url = `${iop.openaiUrl}/v1/chat/completions`;
  for (let index = 0; index < 20; index += 1) {
    await sleep(20);
    await stream({ url, body });
  }
  const processes = { backend, edge: iop.edge, node: iop.node };
  const dump = async () => {
    for (const handle of Object.values(processes)) process.kill(handle.pid, 'SIGUSR2');
    await sleep(300);
  };
  await dump(); // drops the warm-up's records
  const streams = [];
  for (let index = 0; index < Number(values.streams); index += 1) {
    await sleep(Number(values['idle-ms']));
    streams.push(await stream({ url, body }));
  }
  await dump();
  const events = [];
  for (const [name, handle] of Object.entries(processes)) {
    const records = JSON.parse(await readFile(path.join(traceDir, `${handle.pid}.json`), 'utf8'));
    for (const [at, kind, sockets, count] of records) events.push({ at, name, kind, sockets, count });
  }
  events.sort((a, b) => a.at - b.at);
  const lines = [
    `ms after the client's start; the counts are bytes read, buffers written (load average ${os.loadavg()[0].toFixed(2)})`,
  ];
  for (const result of streams) {
    const start = performance.timeOrigin + result.startAt;
    const firstToken = performance.timeOrigin + result.firstTokenAt;
    lines.push(`stream: TTFT ${result.ttftMs.toFixed(2)} ms`);
    for (const event of events.filter((item) => item.at >= start && item.at <= firstToken)) {
      lines.push(
        `  ${(event.at - start).toFixed(3).padStart(8)}  ${event.name.padEnd(8)} ${event.kind.padEnd(13)}${event.sockets.padEnd(14)}${event.count}`,
      );
    }
    lines.push(`  ${(firstToken - start).toFixed(3).padStart(8)}  client   first token`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await stopAll();
  await removeTempDirs();
  await rm(traceDir, { recursive: true, force: true });
}
