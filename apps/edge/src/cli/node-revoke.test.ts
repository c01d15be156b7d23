import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { renderConfigTemplate } from '@iop/config';
import { createNodeStore } from '../node/node-store.js';
import { memoryIo } from './test-support/memory-io.js';
import { runCli } from './run-cli.js';

describe('iop-edge node revoke', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-revoke-'));
    fs.writeFileSync(
      path.join(dir, 'edge.yaml'),
      renderConfigTemplate({ publicUrl: 'http://198.51.100.7:19091', dataDir: path.join(dir, 'data') }),
    );
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('removes the stored token so the node no longer verifies, and fails for a node without one', async () => {
    const store = createNodeStore({ dataDir: path.join(dir, 'data') });
    const { token } = await store.register('node-01');
    const first = memoryIo(dir);
    expect(await runCli(['node', 'revoke', 'node-01'], first.io)).toBe(0);
    expect(first.out()).toContain('Revoked the token of node node-01');
    await expect(store.verify('node-01', token)).resolves.toEqual({ ok: false, reason: 'unknown_node' });

    const again = memoryIo(dir);
    expect(await runCli(['node', 'revoke', 'node-01'], again.io)).toBe(1);
    expect(again.err()).toContain('node node-01 has no token');
    expect(await runCli(['node', 'revoke', 'bad id'], memoryIo(dir).io)).toBe(2);
  });
});
