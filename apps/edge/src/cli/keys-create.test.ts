import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { createKeysCreateCommand } from './keys-create.js';
import { memoryIo } from './test-support/memory-io.js';

const ORIGINAL = `# team fabric
edge: { id: e1 }   # the edge

openai:
  enabled: true
  # keys of the teams
  api_keys:
    - sk-legacy   # kept as written
`;

describe('iop-edge keys create', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-keys-'));
    file = path.join(dir, 'edge.yaml');
    fs.writeFileSync(file, ORIGINAL, { mode: 0o600 });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const command = createKeysCreateCommand({ randomBytes: (size) => Buffer.alloc(size, 7) });

  it('prints the key once, stores only its digest with the limits, and keeps comments', async () => {
    const io = memoryIo(dir);
    const argv = [
      'team-a',
      '--models',
      'm1, m2',
      '--rpm',
      '5',
      '--max-concurrent',
      '1',
      '--budget',
      '100/day',
    ];
    expect(await command.run([...argv, '--json', '--config', file], io.io)).toBe(0);
    const printed = JSON.parse(io.out()) as { id: string; key: string; key_sha256: string };
    expect(printed.key).toMatch(/^sk-iop-[A-Za-z0-9_-]{43}$/);
    expect(printed.key_sha256).toBe(createHash('sha256').update(printed.key).digest('hex'));
    const text = fs.readFileSync(file, 'utf8');
    expect(text).not.toContain(printed.key);
    for (const comment of ['# team fabric', '# the edge', '# keys of the teams', '# kept as written'])
      expect(text).toContain(comment);
    const loaded = parseConfigText(text, file);
    if (!loaded.ok) throw new Error('invalid result');
    expect(loaded.config.openai.api_keys[1]).toEqual({
      id: 'team-a',
      key: '',
      key_sha256: printed.key_sha256,
      models: ['m1', 'm2'],
      rpm: 5,
      tpm: null,
      max_concurrent: 1,
      token_budget: { tokens: 100, per: 'day' },
      weight: 1,
      priority: 'interactive',
    });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('writes a key’s fair share (weight, priority), and refuses a weight beyond 1000 without writing', async () => {
    const io = memoryIo(dir);
    const argv = ['bulk', '--weight', '3', '--priority', 'batch', '--config', file];
    expect(await command.run(argv, io.io)).toBe(0);
    const loaded = parseConfigText(fs.readFileSync(file, 'utf8'), file);
    if (!loaded.ok) throw new Error('invalid result');
    expect(loaded.config.openai.api_keys[1]).toMatchObject({ id: 'bulk', weight: 3, priority: 'batch' });
    const before = fs.readFileSync(file, 'utf8');
    const heavy = memoryIo(dir);
    expect(await command.run(['heavy', '--weight', '1001', '--config', file], heavy.io)).toBe(1);
    expect(heavy.err()).toContain('weight');
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    await expect(command.run(['x', '--priority', 'urgent', '--config', file], io.io)).rejects.toThrow(
      '--priority',
    );
  });

  it('creates openai.api_keys when the file has none', async () => {
    fs.writeFileSync(file, 'edge: { id: e1 }\n');
    const io = memoryIo(dir);
    expect(await command.run(['ops', '--config', file], io.io)).toBe(0);
    expect(io.out()).toContain('Key (shown only now; edge.yaml keeps only its SHA-256): sk-iop-');
    const loaded = parseConfigText(fs.readFileSync(file, 'utf8'), file);
    expect(loaded.ok && loaded.config.openai.api_keys.map((key) => key.id)).toEqual(['ops']);
  });

  it('refuses a duplicate id and leaves the file untouched', async () => {
    const io = memoryIo(dir);
    expect(await command.run(['team-a', '--config', file], io.io)).toBe(0);
    const before = fs.readFileSync(file, 'utf8');
    const again = memoryIo(dir);
    expect(await command.run(['team-a', '--config', file], again.io)).toBe(1);
    expect(again.err()).toContain("a key with id 'team-a' already exists");
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });

  it('rejects bad ids and limits as usage errors', async () => {
    const io = memoryIo(dir);
    await expect(command.run(['bad id', '--config', file], io.io)).rejects.toThrow('invalid key id');
    await expect(command.run(['a', '--rpm', '0', '--config', file], io.io)).rejects.toThrow('--rpm');
    await expect(command.run(['a', '--budget', '10/week', '--config', file], io.io)).rejects.toThrow(
      '--budget',
    );
    expect(fs.readFileSync(file, 'utf8')).toBe(ORIGINAL);
  });
});
