#!/usr/bin/env node
// Compares built checkouts of IOP side by side on this machine, alternating between them so that a drift of the
// machine's load does not land on one tree. Each tree runs its own bench/lib (topology, load, processes) and its
// own dist, so an old tree is measured as it was.
//
//   node bench/compare-trees.mjs ratio [--seconds 5] [--rounds 6] TREE...
//     Every tree's IOP path (fake backend, edge, node) is started once and warmed up; then each round measures,
//     tree after tree (the order reversed every other round), the direct and the IOP max throughput (64
//     connections) and the edge's and node's CPU per answered request. Prints the ratio IOP / direct per round
//     and the medians.
//   node bench/compare-trees.mjs cluster [--runs 2] TREE...
//     For each run and tree in turn (fresh processes each time): nats-server, two edges, the node on the first;
//     six rounds of 5 s at 100 req/s, local and forwarded alternating, after a 4 s warm-up of each path. Prints
//     forwarded − local p50 per round and the medians (the bench's cluster phase, repeated per tree).
//
// Needs each TREE built (`make compile`) and, for `cluster`, nats-server on the PATH.
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '6' },
    runs: { type: 'string', default: '2' },
  },
});
const [mode, ...roots] = positionals;
if ((mode !== 'ratio' && mode !== 'cluster') || roots.length === 0) {
  console.error(
    'usage: node bench/compare-trees.mjs ratio|cluster [--seconds N] [--rounds N] [--runs N] TREE...',
  );
  process.exit(2);
}
const positive = (name) => {
  const value = Number(flags[name]);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} must be a positive integer, got ${flags[name]}`);
    process.exit(2);
  }
  return value;
};
const seconds = positive('seconds');
const rounds = positive('rounds');
const runs = positive('runs');

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const fixed = (values, digits) => values.map((value) => value.toFixed(digits)).join(' ');

async function loadTree(root) {
  const absolute = path.resolve(root);
  const lib = (name) => import(path.join(absolute, 'bench/lib', name));
  return {
    root: absolute,
    name: path.basename(absolute),
    topology: await lib('topology.mjs'),
    load: await lib('load.mjs'),
    processes: await lib('processes.mjs'),
    nats: await lib('nats.mjs'),
  };
}

function requestBody(tree) {
  return JSON.stringify({
    model: tree.topology.MODEL,
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 16,
  });
}

async function startBackend(tree) {
  const backend = await tree.processes.startProcess({
    name: 'backend',
    script: path.join(tree.root, 'bench/fake-backend.mjs'),
    args: ['--latency-ms', '10'],
    ready: /BACKEND_URL=(\S+)/,
  });
  return backend.match[1];
}

async function stopTree(tree) {
  await tree.processes.stopAll();
  await tree.topology.removeTempDirs();
}

async function compareRatio(trees) {
  try {
    for (const tree of trees) {
      const backendUrl = await startBackend(tree);
      tree.body = requestBody(tree);
      tree.direct = `${backendUrl}/v1/chat/completions`;
      tree.iop = await tree.topology.startIopPath({ backendUrl });
      await tree.topology.waitServing(tree.iop.openaiUrl);
      tree.url = `${tree.iop.openaiUrl}/v1/chat/completions`;
      await tree.load.fixedRate({ url: tree.url, body: tree.body, rate: 500, durationMs: 8000 });
      tree.seen = { ratio: [], edge: [], node: [] };
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? [...trees].reverse() : trees;
      for (const tree of order) {
        const { body } = tree;
        const direct = await tree.load.maxThroughput({
          url: tree.direct,
          body,
          connections: 64,
          durationS: seconds,
        });
        const { result, spent } = await tree.processes.cpuDuring(
          { edge: tree.iop.edge.pid, node: tree.iop.node.pid },
          () => tree.load.maxThroughput({ url: tree.url, body, connections: 64, durationS: seconds }),
        );
        tree.seen.ratio.push(result.requestsPerS / direct.requestsPerS);
        tree.seen.edge.push(spent.edge / result.total);
        tree.seen.node.push(spent.node / result.total);
      }
    }
    for (const { name, seen } of trees) {
      console.log(
        `${name}: ratio ${fixed(seen.ratio, 3)} (median ${median(seen.ratio).toFixed(3)}); CPU ms per request ` +
          `edge ${median(seen.edge).toFixed(3)}, node ${median(seen.node).toFixed(3)} (medians)`,
      );
    }
  } finally {
    for (const tree of trees) await stopTree(tree);
  }
}

async function clusterRun(tree) {
  const body = requestBody(tree);
  try {
    const backendUrl = await startBackend(tree);
    const nats = await tree.nats.startNats();
    try {
      const pair = await tree.topology.startClusterPair({ backendUrl, natsUrl: nats.url });
      await tree.topology.waitServing(pair.localUrl);
      await tree.topology.waitServing(pair.forwardedUrl);
      const local = `${pair.localUrl}/v1/chat/completions`;
      const forwarded = `${pair.forwardedUrl}/v1/chat/completions`;
      for (const url of [local, forwarded])
        await tree.load.fixedRate({ url, body, rate: 200, durationMs: 4000 });
      const added = [];
      for (let round = 0; round < 6; round++) {
        const l = await tree.load.fixedRate({ url: local, body, rate: 100, durationMs: 5000 });
        const f = await tree.load.fixedRate({ url: forwarded, body, rate: 100, durationMs: 5000 });
        added.push(f.p50 - l.p50);
      }
      return added;
    } finally {
      await nats.stop();
    }
  } finally {
    await stopTree(tree);
  }
}

async function compareCluster(trees) {
  const medians = new Map(trees.map((tree) => [tree.name, []]));
  for (let run = 0; run < runs; run++) {
    for (const tree of run % 2 ? [...trees].reverse() : trees) {
      const added = await clusterRun(tree);
      medians.get(tree.name).push(median(added));
      console.log(
        `${tree.name}: forwarded − local p50 per round (ms) ${fixed(added, 2)}, median ${median(added).toFixed(2)}`,
      );
    }
  }
  for (const [name, values] of medians) console.log(`${name}: medians of the runs ${fixed(values, 2)}`);
}

const trees = [];
for (const root of roots) trees.push(await loadTree(root));
if (mode === 'ratio') await compareRatio(trees);
else await compareCluster(trees);
