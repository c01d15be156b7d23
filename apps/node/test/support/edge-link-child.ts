// Child process for the reconnect test: an EdgeLink on the real system clock to the edge at 127.0.0.1:argv[2]
// (reconnect every 300 ms without jitter, 2 attempts). It prints `registered` once, then the outcome as JSON,
// and returns without process.exit: only the link's own timers can keep it alive between reconnect attempts.
import { silentLogger } from '@iop/logging';
import { createDialer } from '../../src/link/dial.js';
import { EdgeLink } from '../../src/link/edge-link.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) throw new Error('usage: edge-link-child <port>');
const link = new EdgeLink({
  connect: createDialer({ host: '127.0.0.1', port, connectTimeoutMs: 500 }),
  registration: {
    nodeId: 'reconnect-node',
    token: 'reconnect-token',
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    hostname: 'box',
    supportedAdapters: ['cli'],
  },
  handler: {
    registered: () => void process.stdout.write('registered\n'),
    runRequest: () => undefined,
    cancelRequest: () => undefined,
    nodeCommandRequest: () => undefined,
    nodeConfigRefreshRequest: () => undefined,
    disconnected: () => undefined,
  },
  logger: silentLogger,
  retryIntervalMs: 300,
  retryJitter: 0,
  maxRetries: 2,
  registerTimeoutMs: 1000,
});
const outcome = await link.run();
process.stdout.write(`${JSON.stringify(outcome)}\n`);
