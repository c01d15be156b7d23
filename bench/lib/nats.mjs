// The cluster phase's NATS: Debian's `nats-server` with JetStream on 127.0.0.1, a free port and a temp store.
// Resolves undefined (and the phase is skipped) when the binary is missing.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { tempDir } from './topology.mjs';

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listening(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** @returns {Promise<{ url: string, stop(): Promise<void> } | undefined>} */
export async function startNats() {
  const probe = spawnSync('nats-server', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) return undefined;
  const port = await freePort();
  const storeDir = await tempDir('iop-bench-nats-');
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error('nats-server did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { url: `nats://127.0.0.1:${port}`, stop };
}
