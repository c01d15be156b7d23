// The JSON shapes of the ops dashboard's HTTP API (agent-contract/outer/ui-api.md), in a package of their own:
// the edge serves them and the browser app (apps/edge-ui) reads them, and neither app imports the other. Imports
// nothing. Times are Unix milliseconds (UTC); durations are milliseconds; field names are snake_case like the rest
// of the edge's JSON.

export interface UiNode {
  node_id: string;
  alias: string;
  /** The short label the terminal console gives this node (n1, n2, ... in connection order). */
  label: string;
  os: string;
  arch: string;
  hostname: string;
  agent_version: string;
  remote_address: string;
  connected_since_ms: number;
  last_heartbeat_ms: number;
  adapters: string[];
  /** `detail`: the node's last probe in words; `cause`: why it failed (connection_refused, tls…), '' if healthy. */
  providers: { provider_id: string; health: string; detail: string; cause: string; checked_at_ms: number }[];
  /** What the node reported it can run (its NodeDiscovery); null until it reports (older nodes never do). */
  discovered: UiDiscovered | null;
}

export interface UiDiscovered {
  backends: { kind: string; base_url: string; models: string[]; loaded_models: string[]; version: string }[];
  clis: { name: string; path: string; version: string }[];
  host: {
    cpu_cores: number;
    memory_bytes: number;
    gpus: { name: string; vendor: string; memory_bytes: number }[];
  };
  discovered_at_ms: number;
}

export interface UiDeparture {
  node_id: string;
  alias: string;
  reason: string;
  at_ms: number;
}

export interface UiProvider {
  provider_id: string;
  node_id: string;
  /** ready | disabled | offline */
  status: string;
  /** healthy | unhealthy | unreachable | unknown | disabled | open | half_open (circuit breaker) */
  health: string;
  /** The node's last probe of it, in words, and why it failed (ProviderHealthEntry); '' when never reported. */
  health_detail: string;
  health_cause: string;
  capacity: number;
  in_flight: number;
  queued: number;
  priority: number;
  served_models: string[];
  /** Served models the node reports loaded on its backend (Ollama /api/ps); absent from older edges. */
  resident_models?: string[];
  /** fresh | stale | unknown: how far resident_models is known. */
  resident_state?: string;
}

export interface UiModel {
  id: string;
  display_name: string;
  /** provider id → served model name */
  providers: Record<string, string>;
  /** Waiters in this model's queue (the largest `queued` among its providers). */
  queued: number;
  /** Runs of this model that ended with a queue rejection (`queue_full` → 429) or no provider (`503`). */
  rejected_429: number;
  rejected_503: number;
}

export interface UiRoute {
  model: string;
  node: string;
  adapter: string;
  target: string;
}

export interface UiOverview {
  edge_id: string;
  version: string;
  now_ms: number;
  nodes: UiNode[];
  departures: UiDeparture[];
  providers: UiProvider[];
  models: UiModel[];
  routes: UiRoute[];
  /** The OpenAI fallback route: adapter '' = none. */
  fallback: { adapter: string; target: string; models: string[] };
  totals: { in_flight: number; queued: number; runs_running: number };
  /** This edge's agent runs that made model calls (child runs), with them. */
  agent_runs: UiAgentRun[];
  /** Cluster mode only: per-edge figures (providers and totals above are already cluster-wide). */
  cluster?: { edges: UiClusterEdge[] };
}

/** An agent run and its model calls (child runs; agent-contract/inner/agent-runs.md). */
export interface UiAgentRun {
  run_id: string;
  node_id: string;
  /** The key it runs as, which its calls are charged to ('' = anonymous). */
  principal: string;
  model: string;
  /** Calls queued or running now. */
  live_children: number;
  /** Calls made so far. */
  children: number;
  /** The agent run's own tokens so far: what it reported less its calls'. */
  tokens: number;
  /** Its calls' tokens so far. */
  child_tokens: number;
}

/** One edge of the cluster: its connected nodes and its providers' figures. */
export interface UiClusterEdge {
  edge_id: string;
  nodes: number;
  capacity: number;
  in_flight: number;
  queued: number;
}

/** A run in the dashboard: waiting, running, or how it ended (the edge's RunOutcomeStatus, spelled out here). */
export type UiRunStatus = 'queued' | 'running' | 'completed' | 'error' | 'cancelled';

export interface UiRun {
  run_id: string;
  /** Which surface started it ('ui' for the playground; '' when the edge did not say). */
  surface: string;
  model: string;
  provider: string;
  node_id: string;
  adapter: string;
  target: string;
  status: UiRunStatus;
  started_ms: number;
  ended_ms: number | null;
  queue_ms: number | null;
  duration_ms: number | null;
  /** Time the node reported waiting on its backend. */
  backend_ms: number | null;
  /** duration minus backend time: what the fabric itself added. */
  overhead_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  error: string;
  /** A child run (an agent's model call): the agent run it belongs to; absent for other runs. */
  parent_run_id?: string;
}

export interface UiRunEvent {
  seq: number;
  at_ms: number;
  type: string;
  /** One line describing the part (text of a delta, usage numbers, error message...). */
  summary: string;
}

export interface UiRunDetail {
  run: UiRun;
  events: UiRunEvent[];
  /** Events not kept (the timeline is bounded); the text is still complete up to its own bound. */
  events_dropped: number;
  text: string;
  text_truncated: boolean;
}

export interface UiChartPoint {
  /** Bucket start. */
  t_ms: number;
  requests_per_s: number;
  p50_ms: number | null;
  p99_ms: number | null;
  overhead_p50_ms: number | null;
  overhead_p99_ms: number | null;
  queued: number;
  in_flight: number;
}

export interface UiCharts {
  bucket_ms: number;
  points: UiChartPoint[];
}

export interface UiSession {
  session_id: string;
  target: string;
  mode: string;
}

export interface UiNodeSessions {
  node_id: string;
  adapter: string;
  sessions: UiSession[];
  /** Why the node could not list them ('' when it did). */
  error: string;
}

/** `GET /api/v1/keys`: each API key's recorded usage since `since_ms`, its limits and what is left of its budget. */
export interface UiKeys {
  now_ms: number;
  /** Start of the usage period asked for (`?since=`, default 24h); 0 = every kept record. */
  since_ms: number;
  /** Configured keys first (in edge.yaml order), then keys that only appear in the usage record. */
  keys: UiKey[];
}

export interface UiKey {
  /** The key's id from `openai.api_keys` (never the secret); '' = anonymous runs (no key). */
  id: string;
  /** In `openai.api_keys` now (false: a removed key, the anonymous runs or the A2A bearer token). */
  configured: boolean;
  /** The key's model allow-list; [] = every model. */
  models: string[];
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  /** Runs recorded since `since_ms`, its agents' model calls (child runs) included; `child_runs` of them. */
  runs: number;
  child_runs: number;
  /** Tokens since `since_ms`: each token once, the agents' children's included (they are charged to this key). */
  input_tokens: number;
  output_tokens: number;
  outcomes: { completed: number; error: number; cancelled: number; rejected: number };
  /** Its latest recorded run; null when none is kept. */
  last_used_ms: number | null;
  /** The token budget's current window; null when the key has none. */
  budget: UiKeyBudget | null;
  /** This edge's live counters for the key; null before it is first seen since the edge started. */
  live: { in_flight: number; requests_last_minute: number; tokens_last_minute: number } | null;
}

export interface UiKeyBudget {
  tokens: number;
  per: 'day' | 'month';
  /** The window (UTC day or month) now. */
  window_start_ms: number;
  window_end_ms: number;
  /** Tokens recorded in the window (in + out, children included); runs still going are counted when they end. */
  used: number;
  /** `tokens - used`, never below 0. */
  left: number;
}

export interface UiRefreshReport {
  path: string;
  change: string;
  class: string;
  reason: string;
}

export interface UiRefreshResult {
  status: 'applied' | 'restart_required' | 'rejected';
  mode: string;
  changed_nodes: string[];
  changed_providers: string[];
  changed_models: string[];
  reports: UiRefreshReport[];
  node_results: { node_id: string; status: string; error: string }[];
}

export interface UiError {
  error: { code: string; message: string };
}

/** Events of the playground's text/event-stream answer (`event:` name → data). */
export interface UiPlaygroundEvents {
  meta: { run_id: string; model: string; provider: string; node_id: string; queue_ms: number };
  delta: { text: string };
  done: {
    status: UiRunStatus;
    error: string;
    duration_ms: number;
    overhead_ms: number | null;
    prompt_tokens: number | null;
    completion_tokens: number | null;
  };
  error: { code: string; message: string };
}

/** Events of the live feed `GET /api/v1/stream` (`event:` name → data). */
export interface UiStreamEvents {
  overview: UiOverview;
  run: UiRun;
  charts: UiCharts;
}
