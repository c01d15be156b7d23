import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { memoryIo } from './test-support/memory-io.js';
import { runCli } from './run-cli.js';

const repoConfig = path.resolve(import.meta.dirname, '../../../../configs/edge.yaml');

describe('iop-edge config check', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-config-check-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts the public example configs/edge.yaml with a one-line summary', async () => {
    const { io, out, err } = memoryIo(dir);
    const code = await runCli(['config', 'check', '--config', repoConfig], io);
    // The example runs the node link in plaintext (make run, loopback only): valid, but said loudly.
    expect(err()).toMatch(/^WARNING: edge\.tls is off: the node link is NOT encrypted/);
    expect(code).toBe(0);
    expect(out()).toMatch(/^ok .*edge\.yaml \(flag\): 1 node, 3 providers \(1 enabled\), 2 models; /);
    expect(out().trim().split('\n')).toHaveLength(1);
  });

  it('fails for an OpenAI or A2A API on 0.0.0.0 without authentication, passes with keys or allow_unauthenticated', async () => {
    const file = path.join(dir, 'open.yaml');
    await writeFile(file, 'openai: { enabled: true, listen: "0.0.0.0:18081" }\n');
    const open = memoryIo(dir);
    expect(await runCli(['config', 'check', '--config', file], open.io)).toBe(1);
    expect(open.err()).toContain('openai.listen (line 1): 0.0.0.0:18081 is reachable beyond this host');

    await writeFile(file, 'openai: { enabled: true, listen: "0.0.0.0:18081", api_keys: ["sk-1"] }\n');
    const keyed = memoryIo(dir);
    expect(await runCli(['config', 'check', '--config', file], keyed.io)).toBe(0);

    await writeFile(file, 'a2a: { enabled: true, listen: "0.0.0.0:18082", allow_unauthenticated: true }\n');
    const allowed = memoryIo(dir);
    expect(await runCli(['config', 'check', '--config', file], allowed.io)).toBe(0);
    expect(allowed.err()).toContain(
      'WARNING: a2a.allow_unauthenticated: the A2A API on 0.0.0.0:18082 accepts anyone',
    );
  });

  it('lists every problem with path and line and exits 1', async () => {
    const file = path.join(dir, 'bad.yaml');
    await writeFile(
      file,
      [
        'edge:',
        '  listen: "nowhere"',
        'nodes:',
        '  - id: n1',
        '    providers:',
        '      - { id: p1, type: cli, category: cli, adapter: cli, priority: -1 }',
        '      - { id: p1, type: cli, category: api, adapter: missing }',
        'models:',
        '  - { id: m1, providers: { ghost: x } }',
        '',
      ].join('\n'),
    );
    const { io, err } = memoryIo(dir);
    const code = await runCli(['config', 'check', '--config', file], io);
    expect(code).toBe(1);
    const lines = err().trim().split('\n');
    expect(lines).toEqual([
      'edge.listen (line 2): must be host:port with a port from 0 to 65535',
      'nodes[0].providers[0].priority (line 6): must not be negative (allowed 0 to 1000000)',
      'nodes[0].providers[0].adapter (line 6): no enabled cli adapter instance on this node',
      "nodes[0].providers[1].id (line 7): provider id 'p1' is already used by nodes[0].providers[0]; provider ids are unique across all nodes",
      "nodes[0].providers[1].adapter (line 7): no adapter instance named 'missing' on this node (instances: none)",
      "models[0].providers.ghost (line 9): no provider with id 'ghost' in nodes[].providers[]",
      `${file}: 6 problems`,
    ]);
  });

  it('reports a missing file as a problem, not a crash', async () => {
    const { io, err } = memoryIo(dir);
    const code = await runCli(['config', 'check', '--config', 'absent.yaml'], io);
    expect(code).toBe(1);
    expect(err()).toContain(`config file not found: ${path.join(dir, 'absent.yaml')}`);
  });

  it('uses the bundle-local edge.yaml when --config is absent', async () => {
    await writeFile(path.join(dir, 'edge.yaml'), 'nodes: []\n');
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'check'], io)).toBe(0);
    expect(out()).toContain(`ok ${path.join(dir, 'edge.yaml')} (bundle): 0 nodes`);
  });

  it('rejects unknown flags as usage errors', async () => {
    const { io, err } = memoryIo(dir);
    expect(await runCli(['config', 'check', '--bogus'], io)).toBe(2);
    expect(err()).toContain('usage: iop-edge config check');
  });
});
