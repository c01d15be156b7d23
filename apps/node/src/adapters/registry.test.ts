import { systemClock } from '@iop/clock';
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '@iop/logging';
import { adapterInstance, fakeFactory } from '../runner/test-support/fake-adapter.js';
import { AdapterRegistry, RegistryError } from './registry.js';

function setup() {
  const cli = fakeFactory('cli');
  const ollama = fakeFactory('ollama');
  const registry = new AdapterRegistry({
    factories: { cli, ollama },
    adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
    logger: silentLogger,
  });
  return { registry, cli, ollama };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('AdapterRegistry', () => {
  it('reports the adapter types it has factories for', () => {
    expect(setup().registry.supportedTypes()).toEqual(['cli', 'ollama']);
  });

  it('resolves by exact instance name, or by type when exactly one enabled instance has it', () => {
    const { registry } = setup();
    registry.apply([adapterInstance('cli', 'cli'), adapterInstance('local-llm', 'ollama')]);
    expect(registry.resolve('cli').name).toBe('cli');
    expect(registry.resolve('local-llm').name).toBe('local-llm');
    expect(registry.resolve('ollama').name).toBe('local-llm');
  });

  it('refuses a type name shared by several instances with adapter_ambiguous', () => {
    const { registry } = setup();
    registry.apply([adapterInstance('a', 'ollama'), adapterInstance('b', 'ollama')]);
    expect(() => registry.resolve('ollama')).toThrow(expect.objectContaining({ code: 'adapter_ambiguous' }));
  });

  it('distinguishes unknown from disabled adapters', () => {
    const { registry } = setup();
    registry.apply([adapterInstance('cli', 'cli'), adapterInstance('off', 'ollama', { enabled: false })]);
    expect(() => registry.resolve('off')).toThrow(expect.objectContaining({ code: 'adapter_disabled' }));
    expect(() => registry.resolve('nope')).toThrow(expect.objectContaining({ code: 'adapter_not_found' }));
    expect(registry.list().map((adapter) => adapter.name)).toEqual(['cli']);
  });

  it('rejects unsupported types and duplicate names atomically, keeping the previous set', () => {
    const { registry, cli } = setup();
    registry.apply([adapterInstance('cli', 'cli')]);
    let error: unknown;
    try {
      registry.apply([
        adapterInstance('x', 'openai_compat'),
        adapterInstance('d', 'cli'),
        adapterInstance('d', 'cli'),
      ]);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).code).toBe('invalid_config');
    expect((error as RegistryError).message).toContain("type 'openai_compat'");
    expect((error as RegistryError).message).toContain("'d' appears twice");
    expect(registry.resolve('cli')).toBe(cli.built[0]);
    expect(cli.built).toHaveLength(1);
  });

  it('closes what it built when a factory throws mid-apply', async () => {
    const cli = fakeFactory('cli');
    let calls = 0;
    const registry = new AdapterRegistry({
      factories: {
        cli: (instance, deps) => {
          calls += 1;
          if (calls === 2) throw new Error('bad profile');
          return cli(instance, deps);
        },
      },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    expect(() => registry.apply([adapterInstance('a', 'cli'), adapterInstance('b', 'cli')])).toThrow(
      /bad profile/,
    );
    await flush();
    expect(cli.built[0].closeCount).toBe(1);
    expect(() => registry.resolve('a')).toThrow(RegistryError);
  });

  it('keeps unchanged instances, replaces changed ones and closes removed ones', async () => {
    const { registry, cli } = setup();
    const profiles = { 'fake-cli': { command: 'a' } };
    registry.apply([
      adapterInstance('keep', 'cli'),
      adapterInstance('change', 'cli', {
        cli: { profiles: {}, maxSessions: 1, sessionIdleTtlMs: 0, workspaceRoots: [], runAs: '' },
      }),
      adapterInstance('drop', 'cli'),
    ]);
    const [keep, change, drop] = cli.built;
    const result = registry.apply([
      adapterInstance('keep', 'cli'),
      adapterInstance('change', 'cli', {
        cli: {
          profiles: profiles as never,
          maxSessions: 2,
          sessionIdleTtlMs: 0,
          workspaceRoots: [],
          runAs: '',
        },
      }),
      adapterInstance('new', 'cli'),
    ]);
    expect(result).toEqual({ added: ['new'], kept: ['keep'], replaced: ['change'], removed: ['drop'] });
    await flush();
    expect(registry.resolve('keep')).toBe(keep);
    expect(registry.resolve('change')).not.toBe(change);
    expect(keep.closeCount).toBe(0);
    expect(change.closeCount).toBe(1);
    expect(drop.closeCount).toBe(1);
  });

  it('treats settings with reordered keys as unchanged', () => {
    const { registry, cli } = setup();
    registry.apply([{ name: 'a', type: 'cli', enabled: true, cli: undefined, http: undefined }]);
    const change = registry.apply([
      { http: undefined, cli: undefined, enabled: true, type: 'cli', name: 'a' },
    ]);
    expect(change.kept).toEqual(['a']);
    expect(cli.built).toHaveLength(1);
  });

  it('closes a removed instance only after its last hold is released, exactly once', async () => {
    const { registry, cli } = setup();
    registry.apply([adapterInstance('cli', 'cli')]);
    const first = registry.acquire('cli');
    const second = registry.acquire('cli');
    registry.apply([]);
    await flush();
    expect(cli.built[0].closeCount).toBe(0);
    expect(registry.retiringCount()).toBe(1);
    first.release();
    first.release();
    await flush();
    expect(cli.built[0].closeCount).toBe(0);
    second.release();
    await flush();
    expect(cli.built[0].closeCount).toBe(1);
    expect(registry.retiringCount()).toBe(0);
    expect(() => registry.acquire('cli')).toThrow(expect.objectContaining({ code: 'adapter_not_found' }));
  });

  it('close() closes active and retiring instances once and refuses later applies', async () => {
    const { registry, cli } = setup();
    registry.apply([adapterInstance('a', 'cli'), adapterInstance('b', 'cli')]);
    const hold = registry.acquire('a');
    registry.apply([adapterInstance('b', 'cli')]);
    await registry.close();
    await registry.close();
    hold.release();
    await flush();
    expect(cli.built.map((adapter) => adapter.closeCount)).toEqual([1, 1]);
    expect(() => registry.apply([])).toThrow(RegistryError);
  });
});
