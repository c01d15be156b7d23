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
  resident_poll_interval_ms: { min: 0, max: HOUR_MS },
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
  // fair share and conversation affinity (issue 32)
  key_weight: { min: 1, max: 1000 },
  affinity_max_entries: { min: 1, max: 10_000_000 },
  affinity_ttl_ms: { min: 1_000, max: 7 * DAY_MS },
  affinity_max_wait_ms: { min: 0, max: 600_000 },
  // models[].image_limits (issue 43): remote image URLs per request, bytes a node fetches for one run
  image_max_urls: { min: 1, max: 1024 },
  image_max_total_bytes: { min: 1, max: 1024 * 1024 * 1024 },
  // routing.retry / routing.circuit_breaker (issue 32, retry before the first byte and passive health)
  retry_max_attempts: { min: 1, max: 16 },
  circuit_consecutive_failures: { min: 1, max: 1_000 },
  circuit_window_ms: { min: 100, max: HOUR_MS },
  circuit_min_requests: { min: 1, max: 100_000 },
  circuit_cooldown_ms: { min: 10, max: HOUR_MS },
  // openai.responses (issue 44, stored conversations): how long and how many stored responses per key
  responses_store_ttl_days: { min: 1, max: 3650 },
  responses_store_max_per_key: { min: 1, max: 1_000_000 },
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
  resident_poll_interval_ms: 5_000,
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
  // fair share and conversation affinity (issue 32)
  key_weight: 1,
  key_priority: 'interactive',
  affinity_max_entries: 10_000,
  affinity_ttl_ms: 600_000,
  affinity_max_wait_ms: 0,
  // models[].image_limits
  image_max_urls: 16,
  image_max_total_bytes: 64 * 1024 * 1024,
  // routing.retry / routing.circuit_breaker
  retry_max_attempts: 2,
  circuit_consecutive_failures: 3,
  circuit_failure_rate: 0.5,
  circuit_window_ms: 30_000,
  circuit_min_requests: 10,
  circuit_cooldown_ms: 5_000,
  // openai.responses
  responses_store_ttl_days: 30,
  responses_store_max_per_key: 1000,
} as const;
