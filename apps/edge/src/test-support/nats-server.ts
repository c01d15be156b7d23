// Test support: a real `nats-server` with JetStream on 127.0.0.1, a run-time port and a temporary store dir.
// Tests that need it skip with one printed line when the binary is missing, and fail naming it under CI=true
// (`.ci/run` installs it).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { requireTool } from '@iop/testkit';

export interface NatsServer {
  readonly url: string;
  /** Stops the server (SIGTERM, then SIGKILL after 3 s) and removes its store; idempotent. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL) and keeps its store: a crash. */
  kill(): Promise<void>;
  /** Starts a killed server again on the same port with the same store. */
  restart(): Promise<void>;
}

/**
 * True when `nats-server` runs; otherwise prints why the suite is skipped, or throws under CI=true (requireTool).
 */
export function natsServerAvailable(suite: string): boolean {
  const probe = spawnSync('nats-server', ['--version'], { stdio: 'ignore' });
  return requireTool('nats-server', !probe.error && probe.status === 0, suite, 'bash .ci/run installs it');
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline)
      throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-nats-'));
  const launch = () => {
    const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
      stdio: 'ignore',
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { child, exited };
  };
  let running = launch();
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const { child, exited } = running;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
  };
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await halt('SIGTERM');
      fs.rmSync(storeDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  try {
    await waitForPort(port, running.child, 10_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    stop,
    kill: () => halt('SIGKILL'),
    restart: async () => {
      if (stopping) throw new Error('the nats-server was stopped');
      await halt('SIGKILL');
      running = launch();
      await waitForPort(port, running.child, 10_000);
    },
  };
}
