// Numeric defaults and inclusive bounds of every numeric edge.yaml key. The schema enforces the bounds, the
// normalizer applies the defaults, and the contract document lists the same table; change all three together.

export interface Limit {
  readonly min: number;
  readonly max: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const LIMITS = {
  register_timeout_ms: { min: 100, max: 600_000 },
  heartbeat_interval_ms: { min: 100, max: 600_000 },
  heartbeat_timeout_ms: { min: 200, max: HOUR_MS },
  timeout_sec: { min: 1, max: 86_400 },
  max_tokens: { min: 1, max: 10_000_000 },
  thinking_token_budget: { min: 0, max: 10_000_000 },
  max_concurrency: { min: 1, max: 1024 },
  health_probe_interval_ms: { min: 0, max: HOUR_MS },
  max_sessions: { min: 1, max: 1024 },
  session_idle_ttl_ms: { min: 0, max: 7 * DAY_MS },
  idle_timeout_ms: { min: 50, max: HOUR_MS },
  cli_request_timeout_ms: { min: 0, max: DAY_MS },
  result_grace_ms: { min: 0, max: 600_000 },
  context_size: { min: 0, max: 10_000_000 },
  http_request_timeout_ms: { min: 0, max: DAY_MS },
  capacity: { min: 1, max: 1024 },
  max_queue: { min: 0, max: 100_000 },
  queue_timeout_ms: { min: 1, max: HOUR_MS },
  priority: { min: 0, max: 1_000_000 },
  rpm: { min: 1, max: 10_000_000 },
  tpm: { min: 1, max: 1_000_000_000 },
  max_concurrent: { min: 1, max: 100_000 },
  budget_tokens: { min: 1, max: 1_000_000_000_000 },
  retention_days: { min: 1, max: 3650 },
  reserve_max_tokens: { min: 0, max: 10_000_000 },
  cluster_heartbeat_ms: { min: 50, max: 60_000 },
  cluster_state_ttl_ms: { min: 1_000, max: 600_000 },
} as const satisfies Record<string, Limit>;

export const DEFAULTS = {
  edge_id: 'edge',
  edge_listen: '0.0.0.0:19090',
  data_dir: 'data',
  register_timeout_ms: 5_000,
  heartbeat_interval_ms: 5_000,
  heartbeat_timeout_ms: 15_000,
  logging_level: 'info',
  logging_format: 'json',
  metrics_listen: '127.0.0.1:19092',
  refresh_listen: '127.0.0.1:19093',
  ui_listen: '127.0.0.1:19094',
  bootstrap_listen: '0.0.0.0:19091',
  artifact_dir: 'artifacts',
  console_adapter: 'cli',
  console_session_id: 'default',
  openai_listen: '127.0.0.1:18081',
  openai_session_id: 'openai',
  openai_timeout_sec: 300,
  a2a_listen: '127.0.0.1:18082',
  a2a_path: '/a2a',
  a2a_session_id: 'a2a',
  a2a_timeout_sec: 120,
  agent_kind: 'iop-node',
  max_concurrency: 4,
  health_probe_interval_ms: 30_000,
  max_sessions: 16,
  session_idle_ttl_ms: 30 * 60_000,
  idle_timeout_ms: 2_000,
  cli_request_timeout_ms: 600_000,
  result_grace_ms: 3_000,
  http_request_timeout_ms: 300_000,
  context_size: 0,
  capacity: 1,
  max_queue: 16,
  queue_timeout_ms: 30_000,
  priority: 0,
  usage_retention_days: 90,
  usage_reserve_max_tokens: 1024,
  tracing_sample_ratio: 1,
  cluster_heartbeat_ms: 500,
  cluster_state_ttl_ms: 3_000,
} as const;
