// The node's link in a process of its own, on the real system clock: after the edge goes away there is no socket
// left, and the wait before each reconnect attempt is the only thing keeping the node alive. The clock's timers
// are unref'd unless asked otherwise, so this checks that the reconnect wait asks (keepAlive) and the node lives
// through every attempt instead of exiting in the middle of the first wait.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from '@jest/globals';
import { FakeEdge } from '../src/link/test-support/fake-edge.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const register = path.join(here, 'support/register-ts.mjs');
const child = path.join(here, 'support/edge-link-child.ts');

it('stays alive through its reconnect waits after the edge is gone, then ends with retries-exhausted', async () => {
  const edge = await FakeEdge.start();
  let closing: Promise<void> | undefined;
  try {
    const node = spawn(process.execPath, ['--import', register, child, String(edge.port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let lostAt = 0;
    node.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!closing && stdout.includes('registered\n')) {
        lostAt = Date.now();
        closing = edge.close();
      }
    });
    node.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => node.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('registered');
    expect(JSON.parse(lines[1] ?? '{}')).toMatchObject({ kind: 'retries-exhausted', attempts: 2 });
    // Two waits of 300 ms happened before the outcome (an unref'd wait would end the process at once).
    expect(Date.now() - lostAt).toBeGreaterThanOrEqual(600);
  } finally {
    await (closing ?? edge.close());
  }
}, 20_000);
