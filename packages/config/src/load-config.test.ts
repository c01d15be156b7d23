import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { formatIssue } from './format-issue.js';
import { loadConfigFile, parseConfigText } from './load-config.js';
import type { ConfigIssue, EdgeConfig } from './types.js';

function load(text: string): EdgeConfig {
  const result = parseConfigText(text, 'test.yaml');
  if (!result.ok)
    throw new Error(`expected a valid config, got:\n${result.issues.map(formatIssue).join('\n')}`);
  return result.config;
}

function issues(text: string): ConfigIssue[] {
  const result = parseConfigText(text, 'test.yaml');
  if (result.ok) throw new Error('expected the config to be rejected');
  return [...result.issues];
}

function paths(text: string): string[] {
  return issues(text).map((issue) => issue.path);
}

const repoConfig = path.resolve(import.meta.dirname, '../../../configs/edge.yaml');

describe('parseConfigText: defaults', () => {
  it('accepts an empty document and applies every documented default', () => {
    const config = load('');
    expect(config.edge).toEqual({
      id: 'edge',
      listen: '0.0.0.0:19090',
      data_dir: 'data',
      tls: { enabled: false, cert_file: '', key_file: '' },
      register_timeout_ms: 5_000,
      heartbeat_interval_ms: 5_000,
      heartbeat_timeout_ms: 15_000,
    });
    expect(config.logging).toEqual({ level: 'info', format: 'json' });
    expect(config.metrics).toEqual({ enabled: false, listen: '127.0.0.1:19092' });
    expect(config.ui).toEqual({ enabled: false, listen: '127.0.0.1:19094' });
    expect(config.refresh).toEqual({
      enabled: true,
      listen: '127.0.0.1:19093',
      admin_token: '',
      admin_keys: [],
    });
    expect(config.bootstrap).toEqual({
      listen: '0.0.0.0:19091',
      public_url: '',
      artifact_dir: 'artifacts',
      edge_address: '',
    });
    expect(config.console).toEqual({ node: '', adapter: 'cli', target: '', session_id: 'default' });
    expect(config.openai.listen).toBe('127.0.0.1:18081');
    expect(config.openai.enabled).toBe(false);
    expect(config.openai.timeout_sec).toBe(300);
    expect(config.openai.responses).toEqual({ store_ttl_days: 30, store_max_per_key: 1000 });
    expect(config.a2a).toMatchObject({
      enabled: false,
      listen: '127.0.0.1:18082',
      path: '/a2a',
      timeout_sec: 120,
    });
    expect(config.models).toEqual([]);
    expect(config.nodes).toEqual([]);
  });

  it('reads openai.responses and refuses out-of-range bounds with their paths', () => {
    const config = load('openai: { responses: { store_ttl_days: 2, store_max_per_key: 5 } }');
    expect(config.openai.responses).toEqual({ store_ttl_days: 2, store_max_per_key: 5 });
    expect(paths('openai: { responses: { store_ttl_days: 0, store_max_per_key: 0 } }')).toEqual([
      'openai.responses.store_ttl_days',
      'openai.responses.store_max_per_key',
    ]);
  });

  it('defaults provider enabled=true, priority=0, capacity=1, max_queue=16, queue_timeout_ms=30000', () => {
    const config = load(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: p1, type: ollama, category: local_inference, adapter: ollama }
`);
    expect(config.nodes[0]?.providers[0]).toEqual({
      id: 'p1',
      type: 'ollama',
      category: 'local_inference',
      adapter: 'ollama',
      adapter_instance: 'ollama',
      models: [],
      capacity: 1,
      max_queue: 16,
      queue_timeout_ms: 30_000,
      enabled: true,
      priority: 0,
      lifecycle_capabilities: [],
      health: { enabled: true, interval_ms: null },
    });
  });

  it('accepts a provider-level health setting (the seed lists it); its interval has the node bounds', () => {
    const config = load(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: p1, type: ollama, category: local_inference, adapter: ollama, health: { interval_ms: 0 } }
      - { id: p2, type: ollama, category: local_inference, adapter: ollama, health: { enabled: false } }
`);
    expect(config.nodes[0]?.providers.map((provider) => provider.health)).toEqual([
      { enabled: true, interval_ms: 0 },
      { enabled: false, interval_ms: null },
    ]);
    const bad = parseConfigText(
      `
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: p1, type: ollama, category: local_inference, adapter: ollama, health: { interval_ms: -1, every: 5 } }
`,
      'edge.yaml',
    );
    expect(bad.ok ? [] : bad.issues.map((issue) => [issue.path, issue.code])).toEqual([
      ['nodes[0].providers[0].health.every', 'unknown_key'],
      ['nodes[0].providers[0].health.interval_ms', 'range'],
    ]);
  });

  it('defaults node alias to id, runtime and CLI session settings, and profile timing', () => {
    const config = load(`
nodes:
  - id: n1
    adapters: { cli: { profiles: { p: { command: "x" } } } }
`);
    const node = config.nodes[0];
    expect(node?.alias).toBe('n1');
    expect(node?.agent_kind).toBe('iop-node');
    expect(node?.runtime).toEqual({
      max_concurrency: 4,
      health_probe_interval_ms: 30_000,
      resident_poll_interval_ms: 5_000,
    });
    expect(node?.adapters.instances[0]).toEqual({
      name: 'cli',
      type: 'cli',
      enabled: true,
      max_sessions: 16,
      session_idle_ttl_ms: 1_800_000,
      workspace_roots: [],
      run_as: '',
      fabric_model: '',
      profiles: {
        p: {
          command: 'x',
          args: [],
          env: {},
          mode: 'oneshot',
          persistent: false,
          terminal: false,
          resume_args: [],
          output_format: 'text',
          idle_timeout_ms: 2_000,
          request_timeout_ms: 600_000,
          result_grace_ms: 3_000,
          fabric_model: '',
        },
      },
    });
  });

  it('takes a cli run_as user name and rejects one that is not a user name', () => {
    const config = load(`
nodes:
  - id: n1
    adapters: { cli: { run_as: iop-agent, profiles: { p: { command: "x" } } } }
`);
    expect(config.nodes[0]?.adapters.instances[0]).toMatchObject({ type: 'cli', run_as: 'iop-agent' });
    const bad = parseConfigText(
      `
nodes:
  - id: n1
    adapters: { cli: { run_as: "root; rm", profiles: { p: { command: "x" } } } }
`,
      'edge.yaml',
    );
    expect(bad.ok ? [] : bad.issues.map((issue) => issue.path)).toEqual(['nodes[0].adapters.cli.run_as']);
  });

  it('derives mode from persistent and persistent from mode', () => {
    const config = load(`
nodes:
  - id: n1
    adapters:
      cli:
        profiles:
          a: { command: "x", persistent: true }
          b: { command: "x", mode: persistent }
          c: { command: "x", mode: persistent-lazy, terminal: true }
          d: { command: "x", mode: antigravity-print }
`);
    const instance = config.nodes[0]?.adapters.instances[0];
    if (instance?.type !== 'cli') throw new Error('expected a cli instance');
    expect(instance.profiles.a).toMatchObject({ mode: 'persistent', persistent: true });
    expect(instance.profiles.b).toMatchObject({ mode: 'persistent', persistent: true });
    expect(instance.profiles.c).toMatchObject({ mode: 'persistent-lazy', persistent: true, terminal: true });
    expect(instance.profiles.d).toMatchObject({ mode: 'antigravity-print', persistent: false });
  });

  it('returns a deeply frozen config', () => {
    const config = load(repoText());
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.nodes[0]?.providers[0])).toBe(true);
    expect(Object.isFrozen(config.nodes[0]?.adapters.instances[0])).toBe(true);
    expect(() => {
      (config.edge as { id: string }).id = 'changed';
    }).toThrow(TypeError);
  });

  it('defaults display_name to the model id and generation policy to null', () => {
    const config = load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: "m:1", providers: { p: "served" } }]
`);
    expect(config.models[0]).toEqual({
      id: 'm:1',
      display_name: 'm:1',
      providers: { p: 'served' },
      default_max_tokens: null,
      min_max_tokens: null,
      default_thinking_token_budget: null,
      drop_unsupported: false,
      fetch_image_urls: false,
      image_limits: { max_urls: 16, max_total_bytes: 64 * 1024 * 1024 },
      affinity: { enabled: true, hash_messages: true, max_wait_ms: 0 },
      retry: { max_attempts: null },
    });
    expect(config.routing.affinity).toEqual({ max_entries: 10_000, ttl_ms: 600_000 });
  });

  it('reads models[].affinity and routing.affinity, refusing bad values with their paths', () => {
    const config = load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, affinity: { enabled: false, hash_messages: false, max_wait_ms: 250 } }]
routing: { affinity: { max_entries: 500, ttl_ms: 60000 } }
`);
    expect(config.models[0]?.affinity).toEqual({ enabled: false, hash_messages: false, max_wait_ms: 250 });
    expect(config.routing.affinity).toEqual({ max_entries: 500, ttl_ms: 60_000 });
    const result = parseConfigText(
      `
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, affinity: { enabled: 1, max_wait_ms: -1, sticky: true } }]
routing: { affinity: { max_entries: 0, ttl_ms: 10 }, other: {} }
`,
      'edge.yaml',
    );
    expect(result.ok).toBe(false);
    const paths = result.ok ? [] : result.issues.map((issue) => `${issue.path} ${issue.code}`);
    expect(paths).toEqual(
      expect.arrayContaining([
        'models[0].affinity.enabled type',
        'models[0].affinity.max_wait_ms range',
        'models[0].affinity.sticky unknown_key',
        'routing.affinity.max_entries range',
        'routing.affinity.ttl_ms range',
        'routing.other unknown_key',
      ]),
    );
  });

  it('reads fetch_image_urls and refuses a non-boolean one with its path', () => {
    const config = load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, fetch_image_urls: true }]
`);
    expect(config.models[0]?.fetch_image_urls).toBe(true);
    expect(() =>
      load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, fetch_image_urls: 1 }]
`),
    ).toThrow(/models\[0\]\.fetch_image_urls/);
  });

  it('reads models[].image_limits and refuses out-of-range ones with their paths', () => {
    const config = load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, image_limits: { max_urls: 4 } }]
`);
    expect(config.models[0]?.image_limits).toEqual({ max_urls: 4, max_total_bytes: 64 * 1024 * 1024 });
    const result = parseConfigText(
      `
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, image_limits: { max_urls: 0, max_total_bytes: 2147483648, count: 1 } }]
`,
      'edge.yaml',
    );
    expect(result.ok).toBe(false);
    const paths = result.ok ? [] : result.issues.map((issue) => `${issue.path} ${issue.code}`);
    expect(paths).toEqual(
      expect.arrayContaining([
        'models[0].image_limits.max_urls range',
        'models[0].image_limits.max_total_bytes range',
        'models[0].image_limits.count unknown_key',
      ]),
    );
  });

  it('reads drop_unsupported and refuses a non-boolean one with its path', () => {
    const config = load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, drop_unsupported: true }]
`);
    expect(config.models[0]?.drop_unsupported).toBe(true);
    expect(() =>
      load(`
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, drop_unsupported: "yes" }]
`),
    ).toThrow(/models\[0\]\.drop_unsupported/);
  });
});

describe('parseConfigText: routing (retry and circuit breaker)', () => {
  it('defaults routing.retry to 2 attempts and the circuit breaker to 3 / 50 % of 10 in 30 s / 5 s', () => {
    expect(load('').routing).toEqual({
      affinity: { max_entries: 10_000, ttl_ms: 600_000 },
      retry: { max_attempts: 2 },
      circuit_breaker: {
        consecutive_failures: 3,
        failure_rate: 0.5,
        window_ms: 30_000,
        min_requests: 10,
        cooldown_ms: 5_000,
      },
    });
  });

  it('reads every routing field and a per-model retry override', () => {
    const config = load(`
routing:
  retry: { max_attempts: 3 }
  circuit_breaker: { consecutive_failures: 5, failure_rate: 0.25, window_ms: 1000, min_requests: 4, cooldown_ms: 200 }
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, retry: { max_attempts: 1 } }]
`);
    expect(config.routing).toEqual({
      affinity: { max_entries: 10_000, ttl_ms: 600_000 },
      retry: { max_attempts: 3 },
      circuit_breaker: {
        consecutive_failures: 5,
        failure_rate: 0.25,
        window_ms: 1000,
        min_requests: 4,
        cooldown_ms: 200,
      },
    });
    expect(config.models[0]?.retry).toEqual({ max_attempts: 1 });
  });

  it('rejects out-of-range and unknown routing fields with their paths', () => {
    expect(
      paths(`
routing:
  retry: { max_attempts: 0 }
  circuit_breaker: { failure_rate: 1.5, cooldown_ms: 0, window: 3 }
nodes: [{ id: n1, adapters: { ollama: { base_url: "http://h:1" } }, providers: [{ id: p, type: ollama, category: api, adapter: ollama }] }]
models: [{ id: m, providers: { p: served }, retry: { max_attempts: 17 } }]
`).sort(),
    ).toEqual([
      'models[0].retry.max_attempts',
      'routing.circuit_breaker.cooldown_ms',
      'routing.circuit_breaker.failure_rate',
      'routing.circuit_breaker.window',
      'routing.retry.max_attempts',
    ]);
  });
});

describe('parseConfigText: adapter normalization', () => {
  it('normalizes each legacy single adapters.<type> block to an instance named after its type', () => {
    const config = load(`
nodes:
  - id: n1
    adapters:
      cli: { enabled: true, profiles: {} }
      ollama: { enabled: true, base_url: "http://127.0.0.1:11434", context_size: 8192 }
      openai_compat: { provider: vllm, base_url: "http://127.0.0.1:8000/v1", headers: { X-A: b } }
`);
    const instances = config.nodes[0]?.adapters.instances ?? [];
    expect(instances.map((instance) => [instance.name, instance.type])).toEqual([
      ['cli', 'cli'],
      ['ollama', 'ollama'],
      ['openai_compat', 'openai_compat'],
    ]);
    expect(instances[1]).toMatchObject({ base_url: 'http://127.0.0.1:11434', context_size: 8192 });
    expect(instances[2]).toMatchObject({ provider: 'vllm', headers: { 'X-A': 'b' } });
  });

  it('adds named instances from instances[] after the legacy blocks', () => {
    const config = load(`
nodes:
  - id: n1
    adapters:
      ollama: { base_url: "http://127.0.0.1:11434" }
      instances:
        - { name: gpu-a, type: openai_compat, provider: vllm, base_url: "http://a:8000/v1" }
        - { name: agents, type: cli, enabled: false, profiles: { c: { command: codex } } }
        - { name: ollama-b, type: ollama, base_url: "http://b:11434" }
`);
    expect(
      config.nodes[0]?.adapters.instances.map(
        (instance) => `${instance.name}:${instance.type}:${instance.enabled}`,
      ),
    ).toEqual(['ollama:ollama:true', 'gpu-a:openai_compat:true', 'agents:cli:false', 'ollama-b:ollama:true']);
  });

  it('normalizes legacy adapters.vllm to an openai_compat instance named vllm with provider vllm', () => {
    const config = load(`
nodes:
  - id: n1
    adapters: { vllm: { base_url: "http://gpu:8000/v1" } }
    providers: [{ id: v, type: vllm, category: api, adapter: vllm }]
`);
    expect(config.nodes[0]?.adapters.instances[0]).toEqual({
      name: 'vllm',
      type: 'openai_compat',
      enabled: true,
      provider: 'vllm',
      base_url: 'http://gpu:8000/v1',
      headers: {},
      request_timeout_ms: 300_000,
    });
    expect(config.nodes[0]?.providers[0]?.adapter_instance).toBe('vllm');
  });

  it('normalizes legacy adapters.openai_compat_instances entries to named openai_compat instances', () => {
    const config = load(`
nodes:
  - id: n1
    adapters:
      openai_compat_instances:
        gpu-1: { provider: vllm, base_url: "http://g1:8000/v1" }
        llama: { provider: llama.cpp, base_url: "http://g2:8080/v1", enabled: false }
`);
    expect(config.nodes[0]?.adapters.instances).toEqual([
      expect.objectContaining({ name: 'gpu-1', type: 'openai_compat', provider: 'vllm', enabled: true }),
      expect.objectContaining({
        name: 'llama',
        type: 'openai_compat',
        provider: 'llama.cpp',
        enabled: false,
      }),
    ]);
  });

  it('rejects two instances with the same name on one node, legacy or named', () => {
    const found = issues(`
nodes:
  - id: n1
    adapters:
      ollama: { base_url: "http://a:1" }
      instances:
        - { name: ollama, type: ollama, base_url: "http://b:1" }
`);
    expect(found).toEqual([
      expect.objectContaining({
        path: 'nodes[0].adapters.instances[0].name',
        code: 'duplicate',
        line: 7,
      }),
    ]);
  });
});

describe('parseConfigText: provider rules', () => {
  const node = (adapters: string, providers: string, id = 'n1'): string =>
    `  - id: ${id}\n    adapters:\n${adapters}\n    providers:\n${providers}\n`;

  it('rejects a provider id used twice, even on different nodes', () => {
    const text =
      'nodes:\n' +
      node(
        '      ollama: { base_url: "http://a:1" }',
        '      - { id: shared, type: ollama, category: api, adapter: ollama }',
      ) +
      node(
        '      ollama: { base_url: "http://b:1" }',
        '      - { id: shared, type: ollama, category: api, adapter: ollama }',
        'n2',
      );
    expect(issues(text)).toEqual([
      expect.objectContaining({
        path: 'nodes[1].providers[0].id',
        code: 'duplicate',
        message: expect.stringContaining('already used by nodes[0].providers[0]') as unknown as string,
      }),
    ]);
  });

  it('resolves an exact instance name before a type name', () => {
    const config = load(`
nodes:
  - id: n1
    adapters:
      instances:
        - { name: ollama, type: openai_compat, base_url: "http://x:1/v1" }
        - { name: local, type: ollama, base_url: "http://y:1" }
    providers: [{ id: p, type: vllm, category: api, adapter: ollama }]
`);
    expect(config.nodes[0]?.providers[0]?.adapter_instance).toBe('ollama');
  });

  it('accepts a bare type name only when exactly one enabled instance has that type', () => {
    const one = load(`
nodes:
  - id: n1
    adapters:
      instances:
        - { name: a, type: ollama, base_url: "http://x:1" }
        - { name: b, type: ollama, base_url: "http://y:1", enabled: false }
    providers: [{ id: p, type: ollama, category: api, adapter: ollama }]
`);
    expect(one.nodes[0]?.providers[0]?.adapter_instance).toBe('a');

    const two = issues(`
nodes:
  - id: n1
    adapters:
      instances:
        - { name: a, type: ollama, base_url: "http://x:1" }
        - { name: b, type: ollama, base_url: "http://y:1" }
    providers: [{ id: p, type: ollama, category: api, adapter: ollama }]
`);
    expect(two).toEqual([
      expect.objectContaining({ path: 'nodes[0].providers[0].adapter', code: 'reference', line: 8 }),
    ]);
    expect(two[0]?.message).toContain("'ollama' is ambiguous: 2 enabled ollama instances (a, b)");
  });

  it('rejects a reference to a disabled or missing instance', () => {
    expect(
      issues(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://x:1", enabled: false } }
    providers:
      - { id: p, type: ollama, category: api, adapter: ollama }
      - { id: q, type: ollama, category: api, adapter: nothere }
`).map((issue) => `${issue.path}: ${issue.message}`),
    ).toEqual([
      "nodes[0].providers[0].adapter: adapter instance 'ollama' is disabled",
      "nodes[0].providers[1].adapter: no adapter instance named 'nothere' on this node (instances: ollama)",
    ]);
  });

  it('requires an enabled cli instance for category cli', () => {
    const found = issues(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://x:1" } }
    providers: [{ id: p, type: cli, category: cli, adapter: ollama }]
`);
    expect(found[0]?.message).toBe("category cli needs an enabled cli adapter instance; 'ollama' is ollama");
  });

  it('skips the adapter reference check for a disabled provider but still validates its structure', () => {
    const ok = load(`
nodes:
  - id: n1
    providers: [{ id: p, type: vllm, category: api, adapter: missing, enabled: false }]
`);
    expect(ok.nodes[0]?.providers[0]).toMatchObject({ enabled: false, adapter_instance: null });

    expect(
      paths(`
nodes:
  - id: n1
    providers:
      - { id: p, type: vllm, category: gpu, adapter: missing, enabled: false, capacity: 0, models: [""], max_queue: -1 }
`),
    ).toEqual([
      'nodes[0].providers[0].category',
      'nodes[0].providers[0].models[0]',
      'nodes[0].providers[0].capacity',
      'nodes[0].providers[0].max_queue',
    ]);
  });

  it('rejects a negative priority and out-of-bounds capacity, max_queue and queue_timeout_ms', () => {
    const found = issues(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://x:1" } }
    providers:
      - { id: p, type: ollama, category: api, adapter: ollama, priority: -1 }
      - { id: q, type: ollama, category: api, adapter: ollama, capacity: 1025, max_queue: 100001, queue_timeout_ms: 0 }
`);
    expect(found.map((issue) => `${issue.path} (line ${issue.line}): ${issue.message}`)).toEqual([
      'nodes[0].providers[0].priority (line 6): must not be negative (allowed 0 to 1000000)',
      'nodes[0].providers[1].capacity (line 7): must be between 1 and 1024',
      'nodes[0].providers[1].max_queue (line 7): must be between 0 and 100000',
      'nodes[0].providers[1].queue_timeout_ms (line 7): must be between 1 and 3600000',
    ]);
  });

  it('requires models[].providers keys to name existing provider ids', () => {
    const found = issues(`
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://x:1" } }
    providers: [{ id: real, type: ollama, category: api, adapter: ollama }]
models:
  - id: m
    providers:
      real: "a"
      ghost: "b"
`);
    expect(found).toEqual([
      {
        path: 'models[0].providers.ghost',
        line: 10,
        code: 'reference',
        message: "no provider with id 'ghost' in nodes[].providers[]",
      },
    ]);
  });
});

describe('parseConfigText: other rules', () => {
  it('reports every problem at once, in file order, with lines', () => {
    const found = issues(`edge:
  listen: "127.0.0.1:99999"
  heartbeat_interval_ms: 5000
  heartbeat_timeout_ms: 5000
logging: { level: loud }
nodes:
  - id: "bad id"
    token_sha256: "abc"
models:
  - { id: m, providers: { nope: x }, default_max_tokens: 0 }
`);
    expect(found.map(formatIssue)).toEqual([
      'edge.listen (line 2): must be host:port with a port from 0 to 65535',
      'edge.heartbeat_timeout_ms (line 4): must be greater than edge.heartbeat_interval_ms (5000)',
      'logging.level (line 5): must be one of: trace, debug, info, warn, error, fatal, silent',
      "nodes[0].id (line 7): must be an identifier: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
      'nodes[0].token_sha256 (line 8): must be a 64-character hex SHA-256 digest',
      'models[0].default_max_tokens (line 10): must be between 1 and 10000000',
      "models[0].providers.nope (line 10): no provider with id 'nope' in nodes[].providers[]",
    ]);
  });

  it('reports YAML syntax errors and duplicate keys with their line', () => {
    expect(issues('edge:\n  id: a\n  id: b\n')).toEqual([
      expect.objectContaining({ code: 'yaml_syntax', line: 3 }),
    ]);
    expect(issues('edge: {\nnodes: [\n')[0]).toMatchObject({ code: 'yaml_syntax' });
  });

  it('treats a key with an empty value as absent (all entries commented out)', () => {
    const config = load('edge:\n  id: e1\n  data_dir:\nmodels:\n  # - id: m\nnodes: ~\n');
    expect(config.edge.data_dir).toBe('data');
    expect(config.models).toEqual([]);
    expect(config.nodes).toEqual([]);
    expect(paths('nodes:\n  -\n')).toEqual(['nodes[0]']);
  });

  it('rejects a document that is not a mapping', () => {
    expect(issues('- a\n- b\n')).toEqual([
      expect.objectContaining({ path: '', code: 'type', message: 'must be a mapping, not a list' }),
    ]);
  });

  it('rejects unknown keys at their key line, so typos never pass silently', () => {
    expect(issues('edge:\n  id: e\n  lisen: "0.0.0.0:1"\n')).toEqual([
      { path: 'edge.lisen', line: 3, code: 'unknown_key', message: "unknown key 'lisen'" },
    ]);
  });

  it('accepts token_sha256 in any case and stores it lowercase', () => {
    const digest = 'A'.repeat(64);
    expect(load(`nodes: [{ id: n1, token_sha256: "${digest}" }]`).nodes[0]?.token_sha256).toBe(
      'a'.repeat(64),
    );
  });

  it('rejects token and token_sha256 that disagree', () => {
    expect(paths(`nodes: [{ id: n1, token: "dev", token_sha256: "${'0'.repeat(64)}" }]`)).toEqual([
      'nodes[0].token_sha256',
    ]);
    // sha256("dev")
    const digest = 'ef260e9aa3c673af240d17a2660480361a8e081d1ffeca2a5ed0e3219fc18567';
    expect(load(`nodes: [{ id: n1, token: "dev", token_sha256: "${digest}" }]`).nodes[0]?.token).toBe('dev');
  });

  it('allows a node with neither token nor token_sha256 (the node store authenticates it)', () => {
    expect(load('nodes: [{ id: n1 }]').nodes[0]).toMatchObject({ token: '', token_sha256: '' });
  });

  it('rejects duplicate node ids and aliases', () => {
    expect(paths('nodes: [{ id: a }, { id: b, alias: a }, { id: b }]')).toEqual([
      'nodes[1].alias',
      'nodes[2].id',
    ]);
  });

  it('rejects two enabled listeners on the same port', () => {
    expect(
      issues(`
edge: { listen: "0.0.0.0:18081" }
openai: { enabled: true, listen: "127.0.0.1:18081" }
a2a: { enabled: true, listen: "127.0.0.1:18081" }
metrics: { enabled: false, listen: "127.0.0.1:18081" }
`).map(formatIssue),
    ).toEqual([
      'openai.listen (line 3): port 18081 is already used by edge.listen (0.0.0.0:18081)',
      'a2a.listen (line 4): port 18081 is already used by edge.listen (0.0.0.0:18081)',
    ]);
    expect(paths('refresh: { listen: "127.0.0.1:19094" }\nui: { enabled: true }')).toEqual(['ui.listen']);
    expect(
      load('openai: { enabled: true, listen: "127.0.0.1:0" }\na2a: { enabled: true, listen: "127.0.0.1:0" }')
        .a2a.enabled,
    ).toBe(true);
  });

  it('requires cert and key files when TLS is enabled', () => {
    expect(paths('edge: { tls: { enabled: true } }')).toEqual(['edge.tls.cert_file', 'edge.tls.key_file']);
  });

  it('rejects a CLI profile whose persistent flag contradicts its mode, and persistent-lazy without a terminal', () => {
    expect(
      paths(`
nodes:
  - id: n1
    adapters:
      cli:
        profiles:
          a: { command: x, mode: persistent, persistent: false }
          b: { command: x, mode: persistent-lazy }
`),
    ).toEqual(['nodes[0].adapters.cli.profiles.a.persistent', 'nodes[0].adapters.cli.profiles.b.terminal']);
  });

  it('rejects min_max_tokens above default_max_tokens and duplicate model ids and routes', () => {
    expect(
      paths(`
models:
  - { id: m, providers: {}, default_max_tokens: 100, min_max_tokens: 200 }
  - { id: m, providers: {} }
openai:
  model_routes: [{ model: a, adapter: cli }, { model: a, adapter: ollama }]
nodes:
  - { id: n1, adapters: { cli: { profiles: {} }, ollama: { base_url: "http://127.0.0.1:11434" } } }
`),
    ).toEqual(['models[0].min_max_tokens', 'models[1].id', 'openai.model_routes[1].model']);
  });

  it('reports routes that could only fail at request time, with path and line', () => {
    const result = parseConfigText(
      `openai:
  adapter: ''
  models: [extra]
  model_routes:
    - { model: a, adapter: clli }
nodes:
  - { id: n1, adapters: { cli: { profiles: {} } } }
`,
      'edge.yaml',
    );
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
      'openai.models[0] (line 3): openai.models lists models of the fallback route, but openai.adapter is empty (set it or move the model to models[] or model_routes)',
      "openai.model_routes[0].adapter (line 5): adapter 'clli' names no enabled adapter instance on any node (enabled: cli)",
    ]);
  });

  it('does not pile reference issues onto a structurally broken value', () => {
    // The provider entry is a string: one structural issue, no cascade of "missing adapter" noise.
    expect(paths('nodes: [{ id: n1, providers: ["oops"] }]')).toEqual(['nodes[0].providers[0]']);
  });

  it('supports YAML anchors and merge keys, with anchors declared under top-level x-* keys', () => {
    const shared = load(`
x-http: &http { request_timeout_ms: 1234 }
nodes:
  - id: n1
    adapters: { ollama: { <<: *http, base_url: "http://h:1" } }
`);
    expect(shared.nodes[0]?.adapters.instances[0]).toMatchObject({ request_timeout_ms: 1234 });
    expect(Object.keys(shared)).not.toContain('x-http');
    expect(paths('y-http: 1\n')).toEqual(['y-http']);

    const config = load(`
nodes:
  - id: n1
    adapters:
      cli:
        profiles:
          a: &p { command: "x", idle_timeout_ms: 900 }
          b: { <<: *p, args: ["--b"] }
`);
    const instance = config.nodes[0]?.adapters.instances[0];
    if (instance?.type !== 'cli') throw new Error('expected cli');
    expect(instance.profiles.b).toMatchObject({ command: 'x', idle_timeout_ms: 900, args: ['--b'] });
  });
});

describe('loadConfigFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-config-load-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts the public example configs/edge.yaml', async () => {
    const result = await loadConfigFile(repoConfig);
    if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
    const node = result.config.nodes[0];
    expect(node?.id).toBe('test-node');
    expect(node?.runtime.max_concurrency).toBe(4);
    expect(node?.token).toBe('');
    expect(result.config.console).toEqual({
      node: '',
      adapter: 'cli',
      target: 'fake-cli',
      session_id: 'default',
    });
    expect(result.config.edge.listen).toBe('127.0.0.1:19090');
    const cli = node?.adapters.instances.find((instance) => instance.name === 'cli');
    if (cli?.type !== 'cli') throw new Error('expected the cli instance');
    expect(cli.profiles['fake-cli']).toMatchObject({
      command: 'bin/iop-fake-cli',
      persistent: true,
      mode: 'persistent',
      idle_timeout_ms: 1500,
    });
    const agents = node?.adapters.instances.find((instance) => instance.name === 'agents');
    if (agents?.type !== 'cli') throw new Error('expected the agents instance');
    expect(Object.keys(agents.profiles).sort()).toEqual([
      'antigravity',
      'claude',
      'claude-fabric',
      'claude-tui',
      'cline',
      'cline-fabric',
      'codex',
      'codex-fabric',
      'opencode',
      'opencode-fabric',
    ]);
    expect(result.config.openai.enabled && result.config.a2a.enabled).toBe(true);
  });

  it('resolves relative data_dir, tls files and artifact_dir against the file directory', async () => {
    const file = path.join(dir, 'edge.yaml');
    await writeFile(
      file,
      'edge: { data_dir: state, tls: { enabled: true, cert_file: c.pem, key_file: /abs/k.pem } }\nbootstrap: { artifact_dir: art }\n',
    );
    const result = await loadConfigFile(file);
    if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
    expect(result.config.edge.data_dir).toBe(path.join(dir, 'state'));
    expect(result.config.edge.tls.cert_file).toBe(path.join(dir, 'c.pem'));
    expect(result.config.edge.tls.key_file).toBe('/abs/k.pem');
    expect(result.config.bootstrap.artifact_dir).toBe(path.join(dir, 'art'));
  });

  it('reports a missing file as a single issue', async () => {
    const result = await loadConfigFile(path.join(dir, 'absent.yaml'));
    expect(result).toEqual({
      ok: false,
      issues: [
        {
          path: '',
          code: 'file_not_found',
          message: `config file not found: ${path.join(dir, 'absent.yaml')}`,
        },
      ],
    });
  });
});

function repoText(): string {
  return `
nodes:
  - id: n1
    adapters: { cli: { profiles: { p: { command: x } } } }
    providers: [{ id: p, type: cli, category: cli, adapter: cli }]
`;
}

describe('formatIssue', () => {
  it('renders path, line and message; the document itself when the path is empty', () => {
    expect(
      formatIssue({ path: 'nodes[0].providers[1].adapter', line: 42, message: 'bad', code: 'reference' }),
    ).toBe('nodes[0].providers[1].adapter (line 42): bad');
    expect(formatIssue({ path: '', message: 'invalid YAML', code: 'yaml_syntax' })).toBe(
      '(document): invalid YAML',
    );
  });
});
