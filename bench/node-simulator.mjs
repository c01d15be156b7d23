#!/usr/bin/env node
// Simulates many nodes on one edge, speaking the real wire protocol (packages/wire FramedConnection): each
// simulated node opens its own TCP connection, registers with its token and then behaves like an idle iop-node:
// it pings the edge every `heartbeat_interval_ms` of the register response and answers the edge's pings
// (`--silent`: answers only, never pings).
//
// A real fleet connects from many addresses; the edge admits at most 16 connections in the handshake per remote
// address (a hostile-input limit). So the simulated nodes are spread over `--addresses` loopback source addresses
// (127.0.0.2, 127.0.0.3, …: the whole 127/8 is loopback on Linux) with at most `--per-address` handshakes in flight
// from each, i.e. `addresses × per-address` registrations in parallel. `--addresses 0` connects from the default
// address (127.0.0.1) only.
//
// Prints `REGISTERED count=<n> ms=<total> p50=<ms> p99=<ms>` once every node is registered, then keeps the
// connections open, answering pings, until SIGTERM/SIGINT. On SIGUSR2 it prints
// `STATUS open=<n> closed=<n> pings_min=<n> pings_total=<n> pongs_min=<n>`: connections still open, connections
// that ended (every one counts: a simulated node never reconnects), the fewest pings any node answered so far and
// the total, and the fewest pongs any node got for its own pings.
// Needs the built wire package (`pnpm exec turbo run build`).
// Usage: node-simulator.mjs --edge HOST:PORT --count N [--prefix sim-] [--token-prefix T] [--addresses 32]
//   [--per-address 6] [--silent]
import net from 'node:net';
import { parseArgs } from 'node:util';
import { envelope as build, FramedConnection, PROTOCOL_VERSION } from '../packages/wire/dist/index.js';

const { values } = parseArgs({
  options: {
    edge: { type: 'string' },
    count: { type: 'string', default: '1000' },
    prefix: { type: 'string', default: 'sim-' },
    'token-prefix': { type: 'string', default: 'bench-token-' },
    addresses: { type: 'string', default: '32' },
    'per-address': { type: 'string', default: '6' },
    silent: { type: 'boolean', default: false },
  },
});
if (!values.edge) {
  process.stderr.write('usage: node-simulator.mjs --edge HOST:PORT --count N\n');
  process.exit(2);
}
const [host, portText] = values.edge.split(':');
const count = Number(values.count);
const addressCount = Number(values.addresses);
const perAddress = Number(values['per-address']);
if (!Number.isInteger(addressCount) || addressCount < 0 || addressCount > 250) {
  process.stderr.write('--addresses must be 0..250\n');
  process.exit(2);
}
if (!Number.isInteger(perAddress) || perAddress < 1 || perAddress > 15) {
  // 16 would reach the edge's per-address handshake cap, where it starts evicting idle handshakes.
  process.stderr.write('--per-address must be 1..15\n');
  process.exit(2);
}
/** Source addresses: 127.0.0.2 … (undefined = let the kernel pick 127.0.0.1). */
const sources =
  addressCount === 0
    ? [undefined]
    : Array.from({ length: addressCount }, (_, index) => `127.0.0.${index + 2}`);

/** Per node: pings answered; the connection, while open. */
const nodes = [];
const registerMs = [];
let closed = 0;
let stopping = false;

async function connectOne(index, localAddress) {
  const socket = await new Promise((resolve, reject) => {
    const candidate = net.connect(
      { host, port: Number(portText), ...(localAddress ? { localAddress } : {}) },
      () => {
        candidate.off('error', reject);
        resolve(candidate);
      },
    );
    candidate.once('error', reject);
  });
  socket.setNoDelay(true);
  const started = performance.now();
  const connection = new FramedConnection(socket, { closeTimeoutMs: 500 });
  await connection.send(
    build.registerRequest({
      nodeId: `${values.prefix}${index}`,
      token: `${values['token-prefix']}${index}`,
      agentVersion: 'bench',
      protocolVersion: PROTOCOL_VERSION,
      os: 'linux',
      arch: 'x64',
      hostname: 'bench-sim',
      supportedAdapters: ['openai_compat'],
    }),
  );
  const iterator = connection.messages()[Symbol.asyncIterator]();
  const first = await iterator.next();
  const response = first.done ? undefined : first.value.msg;
  if (response?.$case !== 'registerResponse' || !response.registerResponse.accepted) {
    throw new Error(`node ${index} not accepted: ${JSON.stringify(response?.registerResponse ?? 'closed')}`);
  }
  registerMs.push(performance.now() - started);
  const node = { connection, pings: 0, pongs: 0, open: true, timer: undefined };
  nodes.push(node);
  if (!values.silent) {
    // Like the node's link: a ping every interval, each timer re-armed after it fires.
    const intervalMs = response.registerResponse.heartbeatIntervalMs || 5000;
    let seq = 0;
    const schedule = () => {
      node.timer = setTimeout(() => {
        seq += 1;
        connection.send(build.heartbeatPing(seq)).catch(() => undefined);
        schedule();
      }, intervalMs);
    };
    schedule();
  }
  void connection.closed.then(({ reason }) => {
    clearTimeout(node.timer);
    node.open = false;
    closed += 1;
    if (!stopping && closed <= 5) process.stderr.write(`node ${index} closed: ${reason}\n`);
  });
  // Idle node: answer pings, ignore everything else, until the connection ends.
  void (async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        const message = next.value.msg;
        if (message?.$case === 'heartbeatPing') {
          node.pings += 1;
          connection.send(build.heartbeatPong(message.heartbeatPing.seq)).catch(() => undefined);
        } else if (message?.$case === 'heartbeatPong') node.pongs += 1;
      }
    } catch {
      // the connection ended: counted through `closed`
    }
  })();
}

const started = performance.now();
let next = 0;
await Promise.all(
  sources.flatMap((localAddress) =>
    Array.from({ length: Math.min(perAddress, count) }, async () => {
      while (next < count) await connectOne(next++, localAddress);
    }),
  ),
);
const totalMs = performance.now() - started;
const sorted = [...registerMs].sort((a, b) => a - b);
const pick = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
process.stdout.write(
  `REGISTERED count=${nodes.length} ms=${totalMs.toFixed(1)} p50=${pick(0.5).toFixed(2)} p99=${pick(0.99).toFixed(2)}\n`,
);

process.on('SIGUSR2', () => {
  let open = 0;
  let pingsMin = Infinity;
  let pingsTotal = 0;
  let pongsMin = Infinity;
  for (const node of nodes) {
    if (node.open) open += 1;
    pingsMin = Math.min(pingsMin, node.pings);
    pingsTotal += node.pings;
    pongsMin = Math.min(pongsMin, node.pongs);
  }
  const min = (value) => (nodes.length ? value : 0);
  process.stdout.write(
    `STATUS open=${open} closed=${closed} pings_min=${min(pingsMin)} pings_total=${pingsTotal} pongs_min=${min(pongsMin)}\n`,
  );
});
const stop = async () => {
  stopping = true;
  for (const node of nodes) clearTimeout(node.timer);
  await Promise.allSettled(nodes.map((node) => node.connection.close('shutdown', { goodbye: true })));
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
