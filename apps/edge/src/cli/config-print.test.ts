import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { memoryIo } from './test-support/memory-io.js';
import { runCli } from './run-cli.js';

const SECRETS = [
  'dev-token-123',
  'sk-key-one',
  'a2a-bearer-xyz',
  'admin-secret-9',
  'Bearer hdr-secret',
  'env-api-key',
  'url-pass',
];

const config = `
refresh: { admin_token: "admin-secret-9" }
openai: { api_keys: ["sk-key-one"] }
a2a: { bearer_token: "a2a-bearer-xyz" }
nodes:
  - id: n1
    token: "dev-token-123"
    adapters:
      cli:
        profiles:
          p: { command: "x", env: { MY_API_KEY: "env-api-key", LANG: "C.UTF-8" } }
      openai_compat:
        base_url: "http://user:url-pass@vllm.example.com:8000/v1"
        headers: { Authorization: "Bearer hdr-secret" }
`;

describe('iop-edge config print', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-config-print-'));
    file = path.join(dir, 'edge.yaml');
    await writeFile(file, config);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the normalized config as YAML with every secret redacted', async () => {
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'print', '--config', file], io)).toBe(0);
    for (const secret of SECRETS) expect(out()).not.toContain(secret);
    expect(out()).toContain('[redacted]');
    expect(out()).toContain('LANG: C.UTF-8');
    expect(out()).toContain('listen: 127.0.0.1:18081');
  });

  it('prints JSON with --json: legacy adapters folded into named instances, secrets redacted', async () => {
    const { io, out } = memoryIo(dir);
    expect(await runCli(['config', 'print', '--json', '--config', file], io)).toBe(0);
    for (const secret of SECRETS) expect(out()).not.toContain(secret);
    const printed = JSON.parse(out()) as {
      nodes: {
        token: string;
        adapters: { instances: { name: string; type: string; headers?: Record<string, string> }[] };
      }[];
      refresh: { admin_token: string };
      openai: { api_keys: { id: string; key: string }[] };
    };
    expect(printed.nodes[0].token).toBe('[redacted]');
    expect(printed.refresh.admin_token).toBe('[redacted]');
    expect(printed.openai.api_keys.map((key) => key.key)).toEqual(['']);
    expect(printed.nodes[0].adapters.instances.map((instance) => [instance.name, instance.type])).toEqual([
      ['cli', 'cli'],
      ['openai_compat', 'openai_compat'],
    ]);
    expect(printed.nodes[0].adapters.instances[1].headers).toEqual({ Authorization: '[redacted]' });
  });

  it('refuses to print an invalid config and lists its problems', async () => {
    await writeFile(file, 'edge: { listen: 5 }\n');
    const { io, out, err } = memoryIo(dir);
    expect(await runCli(['config', 'print', '--config', file], io)).toBe(1);
    expect(out()).toBe('');
    expect(err()).toContain('edge.listen (line 1): must be a string, not an integer');
  });
});
