// The node's HTTP client in a process of its own: pooled idle sockets, a discarded and a cancelled response must
// not keep the process alive (no close() call, no ref'd socket or timer left).
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from '@jest/globals';

const here = path.dirname(fileURLToPath(import.meta.url));
const register = path.join(here, 'support/register-ts.mjs');
const child = path.join(here, 'support/http-client-child.ts');

it('lets its process exit with idle pooled sockets and without close()', async () => {
  const server = http.createServer((request, response) => {
    if (request.url === '/whole') {
      response.end('whole');
      return;
    }
    response.write('first');
    setTimeout(() => response.end('last'), 50);
  });
  // The server would keep idle connections for a minute: only the client can let the child go.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const process_ = spawn(process.execPath, ['--import', register, child, url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let doneAt = 0;
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('done')) doneAt ||= Date.now();
    });
    process_.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => process_.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('done 2');
    // Well before the pool's 4 s idle close and the discard's 1 s limit.
    expect(Date.now() - doneAt).toBeLessThan(900);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 20_000);
