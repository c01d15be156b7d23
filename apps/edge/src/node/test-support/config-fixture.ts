// Normalized configs for edge-core tests, produced by @iop/config's own loader from a small YAML document (so
// every default the loader adds is present), then adjusted with plain object spreads per test.
import {
  formatIssue,
  parseConfigText,
  type CliProfileConfig,
  type EdgeConfig,
  type NodeConfig,
} from '@iop/config';

const FIXTURE_YAML = `
edge:
  id: edge-test
  listen: "127.0.0.1:0"
  data_dir: /nonexistent
  register_timeout_ms: 2000
  heartbeat_interval_ms: 1000
  heartbeat_timeout_ms: 3000
logging: { level: info, format: json }
metrics: { enabled: false }
refresh: { enabled: false }
openai: { enabled: false }
a2a: { enabled: false }
console: { node: "", adapter: cli, target: fake-cli, session_id: default }
nodes:
  - id: test-node
    alias: test-node
    runtime: { max_concurrency: 4, health_probe_interval_ms: 15000, resident_poll_interval_ms: 5000 }
    adapters:
      cli:
        enabled: true
        max_sessions: 8
        session_idle_ttl_ms: 600000
        profiles:
          fake-cli:
            command: bin/iop-fake-cli
            mode: persistent
            persistent: true
            idle_timeout_ms: 1500
            request_timeout_ms: 0
            result_grace_ms: 2000
      instances:
        - name: vllm
          type: openai_compat
          enabled: false
          provider: vllm
          base_url: "http://127.0.0.1:8000/v1"
          headers: { Authorization: "Bearer secret" }
          request_timeout_ms: 60000
        - name: ollama
          type: ollama
          enabled: true
          base_url: "http://127.0.0.1:11434"
          context_size: 8192
          request_timeout_ms: 0
    providers:
      - id: ollama-local
        type: ollama
        category: local_inference
        adapter: ollama
        models: [llama3.2]
        capacity: 2
        max_queue: 8
        queue_timeout_ms: 30000
        lifecycle_capabilities: [list_models, pull_model]
`;

let cached: EdgeConfig | undefined;

function fixture(): EdgeConfig {
  if (cached) return cached;
  const result = parseConfigText(FIXTURE_YAML, 'config-fixture');
  if (!result.ok) throw new Error(`config fixture is invalid:\n${result.issues.map(formatIssue).join('\n')}`);
  cached = result.config;
  return cached;
}

export function fakeCliProfile(overrides: Partial<CliProfileConfig> = {}): CliProfileConfig {
  const cli = fixture().nodes[0]?.adapters.instances.find((instance) => instance.type === 'cli');
  const profile = cli?.type === 'cli' ? cli.profiles['fake-cli'] : undefined;
  if (!profile) throw new Error('config fixture lost its fake-cli profile');
  return { ...profile, ...overrides };
}

export function testNode(overrides: Partial<NodeConfig> = {}): NodeConfig {
  const node = fixture().nodes[0];
  if (!node) throw new Error('config fixture lost its node');
  return { ...node, ...overrides };
}

export function testEdgeConfig(
  overrides: { edge?: Partial<EdgeConfig['edge']>; nodes?: NodeConfig[] } = {},
): EdgeConfig {
  const base = fixture();
  return { ...base, edge: { ...base.edge, ...overrides.edge }, nodes: overrides.nodes ?? [testNode()] };
}
