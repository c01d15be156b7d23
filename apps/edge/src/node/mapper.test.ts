import { describe, it, expect } from '@jest/globals';
import { canonicalJson, defaultNodePayload, mapNodeConfig, payloadForNode } from './mapper.js';
import { fakeCliProfile, testNode } from './test-support/config-fixture.js';

describe('mapNodeConfig', () => {
  it('maps identity, limits, every adapter instance and providers (by resolved instance name)', () => {
    const payload = mapNodeConfig(testNode());
    expect(payload).toMatchObject({
      nodeId: 'test-node',
      alias: 'test-node',
      maxConcurrency: 4,
      healthProbeIntervalMs: 15_000,
    });
    expect(payload.adapters.map((adapter) => [adapter.name, adapter.type, adapter.enabled])).toEqual([
      ['cli', 'cli', true],
      ['vllm', 'openai_compat', false],
      ['ollama', 'ollama', true],
    ]);
    expect(payload.adapters[0]?.cli).toEqual({
      profiles: {
        'fake-cli': {
          command: 'bin/iop-fake-cli',
          args: [],
          env: {},
          mode: 'persistent',
          persistent: true,
          terminal: false,
          resumeArgs: [],
          outputFormat: 'text',
          idleTimeoutMs: 1500,
          requestTimeoutMs: 0,
          resultGraceMs: 2000,
        },
      },
      maxSessions: 8,
      sessionIdleTtlMs: 600_000,
      workspaceRoots: [],
      runAs: '',
    });
    expect(payload.adapters[1]?.http).toEqual({
      provider: 'vllm',
      baseUrl: 'http://127.0.0.1:8000/v1',
      headers: { Authorization: 'Bearer secret' },
      requestTimeoutMs: 60_000,
      contextSize: 0,
    });
    expect(payload.adapters[2]?.http).toMatchObject({ provider: 'ollama', contextSize: 8192 });
    expect(payload.providers).toEqual([
      {
        id: 'ollama-local',
        type: 'ollama',
        category: 'local_inference',
        adapter: 'ollama',
        models: ['llama3.2'],
        capacity: 2,
        enabled: true,
        lifecycleCapabilities: ['list_models', 'pull_model'],
      },
    ]);
    expect(payload.revision).toMatch(/^[0-9a-f]{16}$/);
  });

  it('gives equal configs equal revisions and changed configs different ones', () => {
    const first = mapNodeConfig(testNode());
    const second = mapNodeConfig(testNode());
    expect(second.revision).toBe(first.revision);
    const changed = mapNodeConfig(
      testNode({
        runtime: { max_concurrency: 5, health_probe_interval_ms: 15_000, resident_poll_interval_ms: 5_000 },
      }),
    );
    expect(changed.revision).not.toBe(first.revision);
    const base = testNode();
    const cli = base.adapters.instances[0];
    if (cli?.type !== 'cli') throw new Error('fixture changed');
    const profileChanged = mapNodeConfig({
      ...base,
      adapters: {
        instances: [
          { ...cli, profiles: { 'fake-cli': fakeCliProfile({ idle_timeout_ms: 1600 }) } },
          ...base.adapters.instances.slice(1),
        ],
      },
    });
    expect(profileChanged.revision).not.toBe(first.revision);
  });

  it("maps a provider's health setting to its own probe interval (absent = the node's; disabled = 0)", () => {
    const base = testNode();
    const provider = base.providers[0];
    if (!provider) throw new Error('fixture changed');
    const withHealth = (health: typeof provider.health) =>
      mapNodeConfig({ ...base, providers: [{ ...provider, health }] });
    expect(
      withHealth({ enabled: true, interval_ms: null }).providers[0]?.healthProbeIntervalMs,
    ).toBeUndefined();
    expect(withHealth({ enabled: true, interval_ms: null }).revision).toBe(mapNodeConfig(base).revision);
    expect(withHealth({ enabled: true, interval_ms: 2000 }).providers[0]?.healthProbeIntervalMs).toBe(2000);
    expect(withHealth({ enabled: false, interval_ms: 2000 }).providers[0]?.healthProbeIntervalMs).toBe(0);
    expect(withHealth({ enabled: false, interval_ms: null }).revision).not.toBe(mapNodeConfig(base).revision);
  });

  it('falls back to the id when the alias is empty', () => {
    expect(mapNodeConfig(testNode({ alias: '' })).alias).toBe('test-node');
  });
});

describe('defaultNodePayload / payloadForNode', () => {
  it('gives a store-only node an empty default payload', () => {
    const payload = payloadForNode([testNode()], 'store-only');
    expect(payload).toEqual(defaultNodePayload('store-only'));
    expect(payload).toMatchObject({ nodeId: 'store-only', alias: 'store-only', adapters: [], providers: [] });
    expect(payloadForNode([testNode()], 'test-node').adapters).toHaveLength(3);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and skips undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":2,"z":1}]},"b":1}',
    );
  });
});
