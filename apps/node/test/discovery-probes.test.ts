// Discovery probes against real processes and a real socket: a `--version` that answers, one that hangs while a
// grandchild holds its output pipe, and an HTTP server that accepts connections and never answers. Each probe
// must end at its deadline, not at the other side's pleasure.
import { systemClock } from '@iop/clock';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createNodeHttpClient } from '../src/adapters/http/node-http-client.js';
import { probeOpenAICompat } from '../src/discovery/backend-probes.js';
import type { ProbeFailure } from '../src/discovery/fetch-json.js';
import { execBounded } from '../src/discovery/probe-deps.js';

const posix = process.platform !== 'win32';

describe('discovery probes against real processes and sockets', () => {
  let dir: string;
  let silent: net.Server;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-discovery-probes-'));
    silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });

  const http = createNodeHttpClient({ clock: systemClock });
  afterAll(async () => {
    http.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  async function script(name: string, body: string): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, `#!/bin/sh\n${body}\n`);
    await chmod(file, 0o755);
    return file;
  }

  (posix ? it : it.skip)(
    'reads a version and ends a hanging one at the deadline despite a grandchild',
    async () => {
      const signal = new AbortController().signal;
      const answering = await script('answers', 'echo "codex-cli 0.46.0"');
      await expect(
        execBounded(answering, ['--version'], { timeoutMs: 3000, env: {}, signal }),
      ).resolves.toEqual({
        stdout: 'codex-cli 0.46.0\n',
        stderr: '',
        code: 0,
        timedOut: false,
      });
      // The grandchild keeps the stdout pipe open for 30 s after its parent is killed.
      const pidFile = path.join(dir, 'grandchild.pid');
      const hanging = await script('hangs', `sleep 30 &\necho $! > '${pidFile}'\nsleep 30`);
      const started = Date.now();
      const result = await execBounded(hanging, ['--version'], { timeoutMs: 300, env: {}, signal });
      expect(result).toMatchObject({ code: null, timedOut: true });
      expect(Date.now() - started).toBeLessThan(2000);
      // The whole group went with it: no sleeping grandchild is left behind.
      const grandchild = Number(await readFile(pidFile, 'utf8'));
      const alive = () => {
        try {
          process.kill(grandchild, 0);
          return true;
        } catch {
          return false;
        }
      };
      for (let waited = 0; alive() && waited < 2000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(alive()).toBe(false);
      const missing = await execBounded(path.join(dir, 'missing'), ['--version'], {
        timeoutMs: 1000,
        env: {},
        signal,
      });
      expect(missing).toMatchObject({ code: null, timedOut: false });
    },
  );

  it('gives up on a server that accepts and never answers within the HTTP deadline', async () => {
    const port = (silent.address() as net.AddressInfo).port;
    const started = Date.now();
    const failures: ProbeFailure[] = [];
    const found = await probeOpenAICompat(`http://127.0.0.1:${port}/v1`, {
      http,
      timeoutMs: 300,
      signal: new AbortController().signal,
      onFailure: (failure) => failures.push(failure),
    });
    const took = Date.now() - started;
    expect(found).toBeUndefined();
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(2000);
    expect(failures).toEqual([
      { url: `http://127.0.0.1:${port}/v1/models`, cause: 'timeout', detail: 'no answer within 300 ms' },
    ]);
  });

  it('reports a closed port as connection_refused, with the socket error', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const failures: ProbeFailure[] = [];
    const found = await probeOpenAICompat(`http://127.0.0.1:${port}/v1`, {
      http,
      timeoutMs: 1000,
      signal: new AbortController().signal,
      onFailure: (failure) => failures.push(failure),
    });
    expect(found).toBeUndefined();
    expect(failures).toEqual([
      {
        url: `http://127.0.0.1:${port}/v1/models`,
        cause: 'connection_refused',
        detail: expect.stringContaining(`ECONNREFUSED 127.0.0.1:${port}`) as unknown as string,
      },
    ]);
  });
});
