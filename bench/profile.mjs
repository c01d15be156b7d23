#!/usr/bin/env node
// CPU profile of the IOP path under load: starts the benchmark topology with `--cpu-prof` on the edge and the
// node, saturates it (autocannon, non-streaming; or one long stream with --stream), stops both so they write
// their profiles, and prints the functions with the most self time per process.
// With --rate N the load is a fixed open-loop N req/s instead (below saturation, where the profile's time is the
// processes' own work rather than time spent waiting for a core).
// Usage: node bench/profile.mjs [--dir DIR] [--stream] [--rate N] [--seconds N] [--top N]
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fixedRate, maxThroughput, stream } from './lib/load.mjs';
import { startProcess, stopAll } from './lib/processes.mjs';
import { MODEL, removeTempDirs, repoRoot, startIopPath, tempDir, waitServing } from './lib/topology.mjs';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    stream: { type: 'boolean', default: false },
    rate: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    top: { type: 'string', default: '25' },
  },
});

/** Self time per function (name + file:line) from a .cpuprofile. */
function topFunctions(profile, count) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  const deltas = profile.timeDeltas;
  for (let index = 0; index < profile.samples.length; index += 1) {
    const node = byId.get(profile.samples[index]);
    const frame = node.callFrame;
    const key = `${frame.functionName || '(anonymous)'} ${path.basename(frame.url || '')}:${frame.lineNumber + 1}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + (deltas[index] ?? 0));
  }
  const total = [...selfUs.values()].reduce((sum, value) => sum + value, 0);
  return [...selfUs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

try {
  const dir = values.dir ?? (await tempDir('iop-bench-profile-'));
  const backend = await startProcess({
    name: 'backend',
    script: path.join(repoRoot, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', '10'],
    ready: /BACKEND_URL=(\S+)/,
  });
  const edgeDir = path.join(dir, 'edge');
  const nodeDir = path.join(dir, 'node');
  const iop = await startIopPath({ backendUrl: backend.match[1], nodeOptions: [] });
  // Restart both with profiling, each into its own directory (simplest: separate topologies would differ).
  await iop.node.stop();
  await iop.edge.stop();
  const edgeProfiled = await startIopPath({
    backendUrl: backend.match[1],
    nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${edgeDir}`],
  });
  await waitServing(edgeProfiled.openaiUrl);
  const url = `${edgeProfiled.openaiUrl}/v1/chat/completions`;
  if (values.stream) {
    const result = await stream({
      url,
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        max_tokens: 100_000,
      }),
    });
    process.stdout.write(`stream: ${result.tokens} tokens, ${result.tokensPerS.toFixed(0)} tokens/s\n`);
  } else if (values.rate !== undefined) {
    const rate = Number(values.rate);
    const result = await fixedRate({
      url,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 16 }),
      rate,
      durationMs: Number(values.seconds) * 1000,
    });
    process.stdout.write(
      `fixed ${rate} req/s: ${result.completed} answered, p50 ${result.p50.toFixed(2)} ms\n`,
    );
  } else {
    const result = await maxThroughput({
      url,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 16 }),
      connections: 64,
      durationS: Number(values.seconds),
    });
    process.stdout.write(`throughput: ${result.requestsPerS.toFixed(0)} req/s (${result.non2xx} non-2xx)\n`);
  }
  const pids = { edge: edgeProfiled.edge.pid, node: edgeProfiled.node.pid };
  await edgeProfiled.node.stop();
  await edgeProfiled.edge.stop();
  void nodeDir;
  for (const file of await readdir(edgeDir)) {
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile
    const pid = Number(/^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1]);
    const role = pid === pids.edge ? 'edge' : pid === pids.node ? 'node' : `pid ${pid}`;
    const profile = JSON.parse(await readFile(path.join(edgeDir, file), 'utf8'));
    process.stdout.write(
      `\n== ${role}: ${path.join(edgeDir, file)}\n${topFunctions(profile, Number(values.top)).join('\n')}\n`,
    );
  }
} finally {
  await stopAll();
  if (!values.dir) await removeTempDirs();
}
