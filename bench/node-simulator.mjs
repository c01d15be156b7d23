#!/usr/bin/env node
// Simulates many nodes on one edge, speaking the real wire protocol (packages/wire FramedConnection): each
// simulated node opens its own TCP connection, registers with its token, answers heartbeat pings and sits idle.
// Connects at most `--parallel` at a time (the edge bounds connections in the handshake: 16 per remote address,
// and every simulated node comes from 127.0.0.1). Prints
// `REGISTERED count=<n> ms=<total> p50=<ms> p99=<ms>` once every node is registered, then keeps the connections
// open until SIGTERM/SIGINT. Needs the built wire package (`pnpm exec turbo run build`).
// Usage: node-simulator.mjs --edge HOST:PORT --count N [--prefix sim-] [--token-prefix T] [--parallel 12]
import net from 'node:net';
import { parseArgs } from 'node:util';
import { envelope as build, FramedConnection, PROTOCOL_VERSION } from '../packages/wire/dist/index.js';

const { values } = parseArgs({
  options: {
    edge: { type: 'string' },
    count: { type: 'string', default: '1000' },
    prefix: { type: 'string', default: 'sim-' },
    'token-prefix': { type: 'string', default: 'bench-token-' },
    parallel: { type: 'string', default: '12' },
  },
});
if (!values.edge) {
  process.stderr.write('usage: node-simulator.mjs --edge HOST:PORT --count N\n');
  process.exit(2);
}
const [host, portText] = values.edge.split(':');
const count = Number(values.count);
const parallel = Number(values.parallel);
const connections = [];
const registerMs = [];

async function connectOne(index) {
  const socket = await new Promise((resolve, reject) => {
    const candidate = net.connect({ host, port: Number(portText) }, () => {
      candidate.off('error', reject);
      resolve(candidate);
    });
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
  connections.push(connection);
  // Idle node: answer pings, ignore everything else, until the connection ends.
  void (async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        const message = next.value.msg;
        if (message?.$case === 'heartbeatPing') {
          connection.send(build.heartbeatPong(message.heartbeatPing.seq)).catch(() => undefined);
        }
      }
    } catch {
      // the edge closed the connection; the summary line was already printed
    }
  })();
}

const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(parallel, count) }, async () => {
    while (next < count) await connectOne(next++);
  }),
);
const totalMs = performance.now() - started;
const sorted = [...registerMs].sort((a, b) => a - b);
const pick = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
process.stdout.write(
  `REGISTERED count=${connections.length} ms=${totalMs.toFixed(1)} p50=${pick(0.5).toFixed(2)} p99=${pick(0.99).toFixed(2)}\n`,
);

const stop = async () => {
  await Promise.allSettled(connections.map((connection) => connection.close('shutdown', { goodbye: true })));
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
