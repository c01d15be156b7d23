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
//   node bench/compare-trees.mjs together [--seconds 5] [--rounds 12] TREE...
//     Every tree's cluster (nats-server, two edges, the node) is started once and warmed up. Each round measures
//     the trees one after another (the order reversed every other round), each with its local and forwarded
//     paths loaded at the same time, 50 req/s each, so both see the same machine. Prints forwarded − local p50
//     per round and its median per tree (with the medians of both p50s), and each later tree's per-round
//     differences from the first tree (paired by round: forwarded − local, forwarded p50, local p50) with their
//     medians and middle halves.
//   node bench/compare-trees.mjs cpu [--rate 200] [--seconds 5] [--rounds 6] TREE...
//     Every tree's IOP path is started and warmed up, then all are loaded at the same time at --rate req/s (open
//     loop) for each round: CPU ms per answered request of each edge and node per round, the medians, and each
//     later tree's difference from the first, paired by round (the trees share the machine's load second by
//     second, so a busy neighbour lands on all of them).
//
// Needs each TREE built (`make compile`) and, for `cluster`, nats-server on the PATH.
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string' },
    runs: { type: 'string', default: '2' },
    rate: { type: 'string', default: '200' },
  },
});
const [mode, ...roots] = positionals;
if (!['ratio', 'cluster', 'together', 'cpu'].includes(mode) || roots.length === 0) {
  console.error(
    'usage: node bench/compare-trees.mjs ratio|cluster|together|cpu [--seconds N] [--rounds N] [--runs N] [--rate N] TREE...',
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
flags.rounds ??= mode === 'together' ? '12' : '6';
const rounds = positive('rounds');
const runs = positive('runs');
const cpuRate = positive('rate');

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

async function startCluster(tree) {
  tree.body = requestBody(tree);
  const backendUrl = await startBackend(tree);
  tree.natsServer = await tree.nats.startNats();
  if (!tree.natsServer) throw new Error('nats-server is not installed');
  const pair = await tree.topology.startClusterPair({ backendUrl, natsUrl: tree.natsServer.url });
  await tree.topology.waitServing(pair.localUrl);
  await tree.topology.waitServing(pair.forwardedUrl);
  tree.local = `${pair.localUrl}/v1/chat/completions`;
  tree.forwarded = `${pair.forwardedUrl}/v1/chat/completions`;
}

/** Local and forwarded load at once on one tree's cluster: forwarded − local p50. */
async function bothPaths(tree, rate, durationMs) {
  const { body } = tree;
  const [local, forwarded] = await Promise.all([
    tree.load.fixedRate({ url: tree.local, body, rate, durationMs }),
    tree.load.fixedRate({ url: tree.forwarded, body, rate, durationMs }),
  ]);
  for (const result of [local, forwarded]) {
    if (result.errors > 0 || result.non2xx > 0)
      throw new Error(`${tree.name}: ${result.errors} errors, ${result.non2xx} non-2xx answers`);
  }
  return { local: local.p50, forwarded: forwarded.p50, added: forwarded.p50 - local.p50 };
}

async function compareTogether(trees) {
  try {
    for (const tree of trees) {
      await startCluster(tree);
      await bothPaths(tree, 100, 4000);
      tree.rounds = [];
    }
    for (let round = 0; round < rounds; round++) {
      for (const tree of round % 2 ? [...trees].reverse() : trees)
        tree.rounds.push(await bothPaths(tree, 50, seconds * 1000));
    }
    const of = (tree, what) => tree.rounds.map((round) => round[what]);
    for (const tree of trees) {
      const added = of(tree, 'added');
      console.log(
        `${tree.name}: forwarded − local p50 per round (ms) ${fixed(added, 3)}, median ${median(added).toFixed(3)}; ` +
          `p50 local ${median(of(tree, 'local')).toFixed(3)}, forwarded ${median(of(tree, 'forwarded')).toFixed(3)} ` +
          '(medians)',
      );
    }
    const [first, ...others] = trees;
    for (const tree of others) {
      for (const what of ['added', 'forwarded', 'local']) {
        const paired = of(tree, what).map((value, round) => value - first.rounds[round][what]);
        const sorted = [...paired].sort((a, b) => a - b);
        console.log(
          `${tree.name} − ${first.name}, ${what === 'added' ? 'forwarded − local' : `${what} p50`}, paired by ` +
            `round (ms): ${fixed(paired, 3)}; median ${median(paired).toFixed(3)}, middle half ` +
            `${sorted[Math.floor(sorted.length / 4)].toFixed(3)} to ${sorted[Math.ceil((3 * sorted.length) / 4) - 1].toFixed(3)}`,
        );
      }
    }
  } finally {
    for (const tree of trees) {
      await tree.natsServer?.stop();
      await stopTree(tree);
    }
  }
}

/**
 * Every tree's IOP path (its own backend, edge and node) started and warmed up, then loaded at the same time at
 * a fixed open-loop rate, round after round: CPU ms per request of each edge and node per round (user + system
 * from /proc), and each later tree's difference from the first, paired by round. On a shared machine the trees
 * see the same load in the same seconds, so the comparison survives a busy neighbour better than one tree at a
 * time does (issue 46: CPU per request, not throughput, when latency is the question).
 */
async function compareCpu(trees) {
  try {
    for (const tree of trees) {
      const backendUrl = await startBackend(tree);
      tree.body = requestBody(tree);
      tree.iop = await tree.topology.startIopPath({ backendUrl });
      await tree.topology.waitServing(tree.iop.openaiUrl);
      tree.url = `${tree.iop.openaiUrl}/v1/chat/completions`;
      tree.seen = { edge: [], node: [], p50: [], p99: [] };
    }
    const load = (tree, durationMs) =>
      tree.load.fixedRate({ url: tree.url, body: tree.body, rate: cpuRate, durationMs });
    await Promise.all(trees.map((tree) => load(tree, 8000)));
    for (let round = 0; round < rounds; round++) {
      const measured = await Promise.all(
        trees.map((tree) =>
          tree.processes.cpuDuring({ edge: tree.iop.edge.pid, node: tree.iop.node.pid }, () =>
            load(tree, seconds * 1000),
          ),
        ),
      );
      trees.forEach((tree, index) => {
        const { result, spent } = measured[index];
        const answered = Math.max(1, result.completed);
        tree.seen.edge.push(spent.edge / answered);
        tree.seen.node.push(spent.node / answered);
        tree.seen.p50.push(result.p50);
        tree.seen.p99.push(result.p99);
      });
      console.log(
        `round ${round + 1}: ${trees
          .map(
            ({ name, seen }) =>
              `${name} edge ${seen.edge.at(-1).toFixed(3)} node ${seen.node.at(-1).toFixed(3)}`,
          )
          .join(' | ')}`,
      );
    }
    const [first] = trees;
    for (const { name, seen } of trees) {
      const paired = (key) => median(seen[key].map((value, round) => value - first.seen[key][round]));
      console.log(
        `${name}: CPU ms per request at ${cpuRate} req/s, medians of rounds: edge ${median(seen.edge).toFixed(3)}, ` +
          `node ${median(seen.node).toFixed(3)}; p50 ${median(seen.p50).toFixed(2)} ms, p99 ${median(seen.p99).toFixed(2)} ms` +
          (name === first.name
            ? ''
            : `; − ${first.name} paired by round: edge ${paired('edge').toFixed(3)}, node ${paired('node').toFixed(3)}`),
      );
    }
  } finally {
    for (const tree of trees) await stopTree(tree);
  }
}

const trees = [];
for (const root of roots) trees.push(await loadTree(root));
if (mode === 'ratio') await compareRatio(trees);
else if (mode === 'cluster') await compareCluster(trees);
else if (mode === 'cpu') await compareCpu(trees);
else await compareTogether(trees);
