// Hand-built normalized configs for edge-core tests (what @iop/config would produce), so these tests do not
// depend on YAML loading.
import type { CliProfileConfig, EdgeConfig, NodeConfig } from '@iop/config';

export function fakeCliProfile(overrides: Partial<CliProfileConfig> = {}): CliProfileConfig {
  return {
    command: 'bin/iop-fake-cli',
    args: [],
    env: {},
    mode: 'persistent',
    persistent: true,
    terminal: false,
    resume_args: [],
    output_format: 'text',
    idle_timeout_ms: 1500,
    request_timeout_ms: 0,
    result_grace_ms: 2000,
    ...overrides,
  };
}

export function testNode(overrides: Partial<NodeConfig> = {}): NodeConfig {
  return {
    id: 'test-node',
    alias: 'test-node',
    agent_kind: 'iop-node',
    token: '',
    token_sha256: '',
    runtime: { max_concurrency: 4, health_probe_interval_ms: 15_000 },
    adapters: {
      instances: [
        {
          name: 'cli',
          type: 'cli',
          enabled: true,
          profiles: { 'fake-cli': fakeCliProfile() },
          max_sessions: 8,
          session_idle_ttl_ms: 600_000,
        },
        {
          name: 'vllm',
          type: 'openai_compat',
          enabled: false,
          provider: 'vllm',
          base_url: 'http://127.0.0.1:8000/v1',
          headers: { Authorization: 'Bearer secret' },
          request_timeout_ms: 60_000,
        },
        {
          name: 'ollama',
          type: 'ollama',
          enabled: true,
          base_url: 'http://127.0.0.1:11434',
          context_size: 8192,
          request_timeout_ms: 0,
        },
      ],
    },
    providers: [
      {
        id: 'ollama-local',
        type: 'ollama',
        category: 'local_inference',
        adapter: 'ollama',
        adapter_instance: 'ollama',
        models: ['llama3.2'],
        capacity: 2,
        max_queue: 8,
        queue_timeout_ms: 30_000,
        enabled: true,
        priority: 0,
        lifecycle_capabilities: ['list_models', 'pull_model'],
      },
    ],
    ...overrides,
  };
}

export function testEdgeConfig(
  overrides: { edge?: Partial<EdgeConfig['edge']>; nodes?: NodeConfig[] } = {},
): EdgeConfig {
  return {
    edge: {
      id: 'edge-test',
      listen: '127.0.0.1:0',
      data_dir: '/nonexistent',
      tls: { enabled: false, cert_file: '', key_file: '' },
      register_timeout_ms: 2000,
      heartbeat_interval_ms: 1000,
      heartbeat_timeout_ms: 3000,
      ...overrides.edge,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: false, listen: '127.0.0.1:0' },
    refresh: { enabled: false, listen: '127.0.0.1:0', admin_token: '' },
    bootstrap: { listen: '127.0.0.1:0', public_url: '', artifact_dir: '/nonexistent' },
    console: { node: '', adapter: 'cli', target: 'fake-cli', session_id: 'default' },
    openai: {
      enabled: false,
      listen: '127.0.0.1:0',
      adapter: '',
      target: '',
      models: [],
      session_id: 'openai',
      timeout_sec: 300,
      strict_output: false,
      strict_stream_buffer: false,
      api_keys: [],
      model_routes: [],
    },
    a2a: {
      enabled: false,
      listen: '127.0.0.1:0',
      path: '/a2a',
      node: '',
      adapter: 'cli',
      target: 'fake-cli',
      session_id: 'a2a',
      timeout_sec: 120,
      bearer_token: '',
    },
    models: [],
    nodes: overrides.nodes ?? [testNode()],
  };
}
