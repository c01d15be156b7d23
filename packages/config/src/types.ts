// The normalized edge configuration: what the rest of IOP reads after @iop/config has loaded, defaulted,
// normalized and validated an edge.yaml. Keys keep the YAML (snake_case) names so an issue path such as
// `nodes[0].providers[1].adapter` names both the file location and the property. Every value is present
// (defaults applied) and the whole tree is deeply frozen.

/** Adapter kinds a node can run. */
export type AdapterType = 'cli' | 'ollama' | 'openai_compat';
export const ADAPTER_TYPES: readonly AdapterType[] = ['cli', 'ollama', 'openai_compat'];

/** Resource kind of a provider. */
export type ProviderCategory = 'api' | 'cli' | 'local_inference';
export const PROVIDER_CATEGORIES: readonly ProviderCategory[] = ['api', 'cli', 'local_inference'];

/** Model lifecycle operations a provider supports (routed to its adapter by provider id). */
export type LifecycleCapability = 'list_models' | 'load_model' | 'unload_model' | 'pull_model';
export const LIFECYCLE_CAPABILITIES: readonly LifecycleCapability[] = [
  'list_models',
  'load_model',
  'unload_model',
  'pull_model',
];

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** How a CLI profile drives its executable (see the CLI adapter). */
export type CliMode = 'oneshot' | 'persistent' | 'persistent-lazy' | 'antigravity-print' | 'opencode-sse';
export const CLI_MODES: readonly CliMode[] = [
  'oneshot',
  'persistent',
  'persistent-lazy',
  'antigravity-print',
  'opencode-sse',
];

/** How a one-shot CLI's stdout is parsed. */
export type CliOutputFormat = 'text' | 'claude-stream-json' | 'codex-json' | 'cline-json' | 'opencode-json';
export const CLI_OUTPUT_FORMATS: readonly CliOutputFormat[] = [
  'text',
  'claude-stream-json',
  'codex-json',
  'cline-json',
  'opencode-json',
];

export interface TlsConfig {
  readonly enabled: boolean;
  /** Absolute when loaded from a file (relative paths resolve against the config file's directory). */
  readonly cert_file: string;
  readonly key_file: string;
}

/** `edge:` — identity and the node transport listener. */
export interface EdgeSection {
  readonly id: string;
  /** host:port of the node TCP transport. */
  readonly listen: string;
  /** Edge state (node store, history). Absolute when loaded from a file. */
  readonly data_dir: string;
  readonly tls: TlsConfig;
  /** How long a new connection may take to send its register request. */
  readonly register_timeout_ms: number;
  /** Heartbeat interval announced to nodes in the register response. */
  readonly heartbeat_interval_ms: number;
  /** A node silent for this long is considered gone. Always > heartbeat_interval_ms. */
  readonly heartbeat_timeout_ms: number;
}

export interface LoggingConfig {
  readonly level: LogLevel;
  readonly format: LogFormat;
}

export interface MetricsConfig {
  readonly enabled: boolean;
  readonly listen: string;
}

/** `refresh:` — the operator admin API (gRPC EdgeAdmin). */
export interface RefreshConfig {
  readonly enabled: boolean;
  readonly listen: string;
  /** Bearer token the admin API requires; '' = no authentication (loopback use only). Secret. */
  readonly admin_token: string;
  /**
   * Named admin API keys with a role; `admin_token` stays valid as an operator key. Any key (or the token) makes
   * the admin API require authentication.
   */
  readonly admin_keys: readonly AdminKeyConfig[];
}

/** What an admin key may do: `read` (list nodes/providers, watch events, usage) or `operator` (everything). */
export type AdminRole = 'read' | 'operator';
export const ADMIN_ROLES: readonly AdminRole[] = ['read', 'operator'];

export interface AdminKeyConfig {
  readonly id: string;
  /** Lower-case hex SHA-256 of the secret. */
  readonly key_sha256: string;
  /** The secret when written in clear; '' when only its digest is stored. Secret. */
  readonly key: string;
  readonly role: AdminRole;
}

export interface BootstrapConfig {
  readonly listen: string;
  /** URL nodes use to reach the bootstrap server; '' = derive from listen at run time. */
  readonly public_url: string;
  /** Absolute when loaded from a file. */
  readonly artifact_dir: string;
  /**
   * host:port nodes dial (install scripts, `node register`) when it differs from edge.listen — NAT, a port
   * forward, a relay; '' = edge.listen (a wildcard host replaced by public_url's host).
   */
  readonly edge_address: string;
}

/** Defaults of the interactive ops console. '' node = the single connected node. */
export interface ConsoleConfig {
  readonly node: string;
  readonly adapter: string;
  readonly target: string;
  readonly session_id: string;
}

export interface ModelRouteConfig {
  readonly model: string;
  readonly adapter: string;
  readonly target: string;
  /** '' = any connected node. */
  readonly node: string;
  readonly workspace_required: boolean;
}

export interface OpenAIConfig {
  readonly enabled: boolean;
  readonly listen: string;
  /** Fallback route adapter; '' = none. */
  readonly adapter: string;
  /** Fixed fallback target; '' = use the request's model as target. */
  readonly target: string;
  /** Extra model ids exposed by the fallback route. */
  readonly models: readonly string[];
  readonly session_id: string;
  readonly timeout_sec: number;
  readonly strict_output: boolean;
  readonly strict_stream_buffer: boolean;
  /**
   * API keys (principals) of the OpenAI and A2A surfaces; empty = no authentication. A plain string entry in
   * edge.yaml becomes a key with id `key-<first 8 hex of its SHA-256>` and no limits.
   */
  readonly api_keys: readonly ApiKeyConfig[];
  /** Serve the OpenAI API off loopback without api_keys anyway (warned at every start). */
  readonly allow_unauthenticated: boolean;
  readonly model_routes: readonly ModelRouteConfig[];
  /** Stored conversations of /v1/responses (`store`, `previous_response_id`). */
  readonly responses: OpenAIResponsesConfig;
}

/**
 * `openai.responses`: a response made with `store: true` (the default) keeps its input and output items this many
 * days, at most `store_max_per_key` per API key (the oldest evicted first). Read at startup.
 */
export interface OpenAIResponsesConfig {
  readonly store_ttl_days: number;
  readonly store_max_per_key: number;
}

/** The ops dashboard the edge serves (`ui`): loopback only unless `refresh.admin_token` is set. */
export interface UiConfig {
  readonly enabled: boolean;
  readonly listen: string;
}

/**
 * `http:` — settings every HTTP listener of the edge shares (OpenAI, A2A, dashboard, bootstrap, metrics) and the
 * admin API's `:authority` check.
 */
export interface HttpConfig {
  /**
   * Extra names requests may carry in `Host` (and browsers in `Origin`) besides each listener's own addresses and
   * public URLs: `host` (any port, e.g. a reverse proxy's public name) or `host:port`. Empty = none.
   */
  readonly allowed_hosts: readonly string[];
}

/** Period a token budget is counted over (calendar day / month, UTC). */
export type TokenBudgetPeriod = 'day' | 'month';
export const TOKEN_BUDGET_PERIODS: readonly TokenBudgetPeriod[] = ['day', 'month'];

export interface TokenBudgetConfig {
  readonly tokens: number;
  readonly per: TokenBudgetPeriod;
}

/** One API key: a principal with an optional model allow-list and limits (null = unlimited). */
export interface ApiKeyConfig {
  /** Stable name in usage records, metrics and errors (never the secret). */
  readonly id: string;
  /** Lower-case hex SHA-256 of the secret (computed when the entry gives `key`). */
  readonly key_sha256: string;
  /** The secret when edge.yaml holds it in clear; '' when only its digest is stored. Secret. */
  readonly key: string;
  /** Model ids this key may use; empty = every model. */
  readonly models: readonly string[];
  /** Requests per rolling minute. */
  readonly rpm: number | null;
  /** Tokens (prompt + completion, as the backend reports them) per rolling minute. */
  readonly tpm: number | null;
  /** Runs of this key in flight at once. */
  readonly max_concurrent: number | null;
  readonly token_budget: TokenBudgetConfig | null;
  /**
   * Share of a model's queue this key gets against other keys waiting for the same model (1..1000, default 1):
   * a key of weight 2 is served twice as often as one of weight 1 while both wait.
   */
  readonly weight: number;
  /** `batch` waiters of a model are served only while no `interactive` waiter of it can be (default interactive). */
  readonly priority: KeyPriority;
}

/** Queue class of an API key: `batch` waits while any `interactive` waiter of the same model can be served. */
export type KeyPriority = 'interactive' | 'batch';
export const KEY_PRIORITIES: readonly KeyPriority[] = ['interactive', 'batch'];

/** `usage` — the per-run usage records kept under edge.data_dir. */
export interface UsageConfig {
  /** Records older than this are deleted (checked hourly and at start). */
  readonly retention_days: number;
  /**
   * Answer tokens admission reserves against a key's `tpm` and budget for a request that names no `max_tokens`
   * and whose model has no `default_max_tokens` (settled to what the run used when it ends). 0 = the prompt only.
   */
  readonly reserve_max_tokens: number;
}

/** `tracing` — W3C trace context and OpenTelemetry spans exported over OTLP/HTTP. */
export interface TracingConfig {
  readonly enabled: boolean;
  /** OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces. */
  readonly otlp_endpoint: string;
  /** Fraction of new traces sampled (a caller's sampled flag is honoured). */
  readonly sample_ratio: number;
}

/** `cluster:` — several edges with the same edge.yaml form one fabric over NATS (absent = one edge, no NATS). */
export interface ClusterConfig {
  readonly enabled: boolean;
  /**
   * The fabric keyring file (`iop-edge cluster keygen --out FILE`): one base64 key per line, the first used to
   * seal, every one accepted. Every edge of a fabric holds the same keys. Required when enabled.
   */
  readonly fabric_key_file: string;
  readonly nats: {
    /** NATS server URLs, e.g. nats://10.0.0.5:4222. */
    readonly servers: readonly string[];
    /** Allow NATS beyond loopback without TLS (warned at every start). */
    readonly allow_plaintext: boolean;
    /** A NATS .creds file (JWT + nkey seed); '' = none. */
    readonly credentials_file: string;
    readonly tls: {
      readonly enabled: boolean;
      readonly ca_file: string;
      readonly cert_file: string;
      readonly key_file: string;
    };
  };
  /** How often each edge republishes its state (it also publishes on every change). */
  readonly heartbeat_ms: number;
  /** An edge's state and node ownership expire this long after its last heartbeat. Always > heartbeat_ms. */
  readonly state_ttl_ms: number;
}

export interface A2AConfig {
  readonly enabled: boolean;
  readonly listen: string;
  readonly path: string;
  /** '' = the single connected node. */
  readonly node: string;
  readonly adapter: string;
  readonly target: string;
  readonly session_id: string;
  readonly timeout_sec: number;
  /** '' = no authentication. Secret. */
  readonly bearer_token: string;
  /** Serve A2A off loopback without bearer_token anyway (warned at every start). */
  readonly allow_unauthenticated: boolean;
  /** Externally visible URL of the JSON-RPC endpoint (path included) for the agent card; '' = derived from the request's Host and path. */
  readonly public_url: string;
  readonly push: A2APushConfig;
}

/** `a2a.push` — how task push notifications (webhooks) are delivered. */
export interface A2APushConfig {
  /**
   * Webhook hosts (`host` or `host:port`) exempt from the public-address check, e.g. an internal service; any
   * other target must resolve to public addresses only.
   */
  readonly allow_hosts: readonly string[];
  /** Attempts per notification (the first included) before it is given up. */
  readonly max_attempts: number;
  /** Seconds after a notification was queued past which it is not retried any more. */
  readonly retry_window_sec: number;
  /** Bound of one attempt: resolution, connection, request and response. */
  readonly timeout_ms: number;
}

/** `models[]` — canonical routing keys of the provider pool and their generation policy. */
export interface ModelConfig {
  readonly id: string;
  /** Defaults to id. */
  readonly display_name: string;
  /** provider id → served model name on that provider. */
  readonly providers: Readonly<Record<string, string>>;
  /** Applied when a request names no max tokens; null = leave to the backend. */
  readonly default_max_tokens: number | null;
  /** Requests asking for fewer tokens are raised to this; null = no floor. */
  readonly min_max_tokens: number | null;
  /** Thinking budget applied when a request names none; null = none. */
  readonly default_thinking_token_budget: number | null;
  /**
   * A request field one of this model's backends cannot take is dropped (and named in the
   * `x-iop-dropped-params` response header) instead of refused with 400 `unsupported_parameter`.
   */
  readonly drop_unsupported: boolean;
  /**
   * A remote `image_url` (http/https) for an Ollama backend is fetched by the node (size and time bounded, public
   * addresses only) and sent inline; without it such a request is refused with 400 `unsupported_image_url`.
   * OpenAI-compatible backends receive image URLs as is either way.
   */
  readonly fetch_image_urls: boolean;
  /** Bounds on remote images (issue 43). */
  readonly image_limits: ModelImageLimitsConfig;
  /** Conversation affinity: prefer the provider that served a conversation's previous turn. */
  readonly affinity: ModelAffinityConfig;
  /** Overrides `routing.retry` for this model; null = the routing default. */
  readonly retry: { readonly max_attempts: number | null };
}

/** `models[].image_limits` — bounds on remote image URLs (issue 43). */
export interface ModelImageLimitsConfig {
  /** Remote image URLs one request may carry (all messages together); more = 400 `too_many_image_urls`. Default 16. */
  readonly max_urls: number;
  /**
   * Bytes the node may fetch for one run's image URLs together (`fetch_image_urls`); a run over it fails with
   * `image_fetch_failed`. Default 64 MiB.
   */
  readonly max_total_bytes: number;
}

/** `models[].affinity` (issue 32). */
export interface ModelAffinityConfig {
  /** false = this model's runs are placed without affinity (the key is ignored). Default true. */
  readonly enabled: boolean;
  /**
   * Chat runs without an explicit key (x-session-id, user, metadata.user_id, A2A context) use a hash of the
   * conversation's head (its system/developer messages and first user message). Default true.
   */
  readonly hash_messages: boolean;
  /** How long a run waits for its affine provider to get a free slot before spilling to another. Default 0. */
  readonly max_wait_ms: number;
}

/** `routing.affinity` — the table of affinity key → provider that served it last. */
export interface AffinityRoutingConfig {
  /** Entries kept (least recently used dropped first). Default 10000. */
  readonly max_entries: number;
  /** An entry not used for this long is forgotten. Default 600000 (10 min). */
  readonly ttl_ms: number;
}

export interface CliProfileConfig {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Defaults to 'persistent' when persistent is true, else 'oneshot'. */
  readonly mode: CliMode;
  readonly persistent: boolean;
  readonly terminal: boolean;
  readonly resume_args: readonly string[];
  readonly output_format: CliOutputFormat;
  /** Persistent modes: silence that completes a turn with detail `idle-timeout`. */
  readonly idle_timeout_ms: number;
  /** Run deadline; 0 = none. */
  readonly request_timeout_ms: number;
  /** One-shot: how long a process may linger after printing its final result before it is killed. */
  readonly result_grace_ms: number;
  /**
   * A models[] id the agent's own model calls use through the fabric ('' = none: the CLI calls whatever its own
   * config names). The instance's `fabric_model` when the profile names none. Each run then gets a model endpoint
   * on the node's loopback, filled into `{model_base_url}`, `{anthropic_base_url}`, `{model_api_key}` and
   * `{model}` of `args` and `env`. One-shot modes only (a persistent process outlives the run whose secret it holds),
   * and the model must be served by non-CLI providers (an agent's calls never wait on agent capacity).
   */
  readonly fabric_model: string;
}

interface AdapterInstanceBase {
  /** Unique within the node; a legacy single `adapters.<type>` block gets its type as name. */
  readonly name: string;
  readonly enabled: boolean;
}

export interface CliAdapterInstanceConfig extends AdapterInstanceBase {
  readonly type: 'cli';
  readonly profiles: Readonly<Record<string, CliProfileConfig>>;
  /** Cap on live CLI sessions of this instance. */
  readonly max_sessions: number;
  /** An idle session worker is reaped after this long. */
  readonly session_idle_ttl_ms: number;
  /**
   * Directories a run's workspace must lie in after symlinks are resolved (else `workspace_not_allowed`); empty:
   * the node agent's working directory only. `~` is the node's HOME, relative roots resolve against its cwd.
   */
  readonly workspace_roots: readonly string[];
  /**
   * A local user the CLI processes run as ('' = the node's own user): its uid, gid and HOME, so an agent cannot
   * read the node's token, identity key, history or config. Needs the node to run as root.
   */
  readonly run_as: string;
  /** Default `fabric_model` of this instance's profiles ('' = none); a profile's own value wins. */
  readonly fabric_model: string;
}

export interface OllamaAdapterInstanceConfig extends AdapterInstanceBase {
  readonly type: 'ollama';
  readonly base_url: string;
  /** num_ctx sent to Ollama; 0 = server default. */
  readonly context_size: number;
  /** 0 = no deadline. */
  readonly request_timeout_ms: number;
}

export interface OpenAICompatAdapterInstanceConfig extends AdapterInstanceBase {
  readonly type: 'openai_compat';
  /** Backend flavour, e.g. 'vllm', 'llama.cpp', 'openai'. */
  readonly provider: string;
  readonly base_url: string;
  /** Extra request headers (e.g. Authorization). Values are secret. */
  readonly headers: Readonly<Record<string, string>>;
  /** 0 = no deadline. */
  readonly request_timeout_ms: number;
}

export type AdapterInstanceConfig =
  CliAdapterInstanceConfig | OllamaAdapterInstanceConfig | OpenAICompatAdapterInstanceConfig;

export interface NodeAdaptersConfig {
  /** Every adapter instance of the node, legacy forms folded in, in declaration order. */
  readonly instances: readonly AdapterInstanceConfig[];
}

export interface NodeRuntimeConfig {
  readonly max_concurrency: number;
  readonly health_probe_interval_ms: number;
  /** How often the node asks each Ollama which models it holds loaded (/api/ps), besides after runs; 0 = never. */
  readonly resident_poll_interval_ms: number;
}

/** `nodes[].providers[]` — a provider-pool candidate served by one adapter instance of the node. */
export interface ProviderConfig {
  /** Unique across the whole config. */
  readonly id: string;
  /** Backend kind, e.g. 'vllm', 'ollama', 'cli'. */
  readonly type: string;
  readonly category: ProviderCategory;
  /** As written: an adapter instance name or (legacy) a bare adapter type. */
  readonly adapter: string;
  /** Name of the instance `adapter` resolves to; null only for a disabled provider whose reference dangles. */
  readonly adapter_instance: string | null;
  readonly models: readonly string[];
  readonly capacity: number;
  readonly max_queue: number;
  readonly queue_timeout_ms: number;
  readonly enabled: boolean;
  /** Lower wins among candidates with equal in-flight count. */
  readonly priority: number;
  readonly lifecycle_capabilities: readonly LifecycleCapability[];
  /** Health probes of this provider; overrides the node's `runtime.health_probe_interval_ms`. */
  readonly health: ProviderHealthConfig;
}

/** `nodes[].providers[].health`. */
export interface ProviderHealthConfig {
  /** false = this provider is never probed (its health shows `unknown`). */
  readonly enabled: boolean;
  /** Probe interval; null = the node's `runtime.health_probe_interval_ms`; 0 = no probes. */
  readonly interval_ms: number | null;
}

/** Loopback ports a node probes for OpenAI-compatible servers: vLLM, llama.cpp server, LM Studio, SGLang. */
export const DEFAULT_DISCOVERY_LOCAL_PORTS: readonly number[] = [8000, 8080, 1234, 30000];

/** `nodes[].discovery` — where the node looks for model servers besides Ollama at its OLLAMA_HOST. */
export interface NodeDiscoveryConfig {
  /** OpenAI-compatible base URLs probed at `/v1/models` (with or without the /v1). */
  readonly openai_compat_urls: readonly string[];
  /** Loopback ports probed the same way; [] = none. */
  readonly local_ports: readonly number[];
}

export interface NodeConfig {
  readonly id: string;
  /** Defaults to id. */
  readonly alias: string;
  /** Kind of agent expected to register as this node. */
  readonly agent_kind: string;
  /** Dev plaintext token; '' = none (the node store or token_sha256 authenticates). Secret. */
  readonly token: string;
  /** Lowercase hex SHA-256 of the token; '' = none. */
  readonly token_sha256: string;
  readonly runtime: NodeRuntimeConfig;
  readonly adapters: NodeAdaptersConfig;
  readonly providers: readonly ProviderConfig[];
  readonly discovery: NodeDiscoveryConfig;
}

/** `routing.retry`: re-placing a run that failed before its first output (issue 32). */
export interface RetryConfig {
  /** Total attempts per run, the first included (1 = no retry). */
  readonly max_attempts: number;
}

/** `routing.circuit_breaker`: passive health per provider from the runs it served (issue 32). */
export interface CircuitBreakerConfig {
  /** This many dispatch failures in a row open the circuit. */
  readonly consecutive_failures: number;
  /** Failures / requests in the window at or above this (0..1) open it, once min_requests were seen. */
  readonly failure_rate: number;
  readonly window_ms: number;
  readonly min_requests: number;
  /** An open circuit admits one half-open probe run after this long. */
  readonly cooldown_ms: number;
}

/** `routing:` — how the pool picks and re-picks providers (all applied live). */
export interface RoutingConfig {
  readonly retry: RetryConfig;
  readonly circuit_breaker: CircuitBreakerConfig;
  readonly affinity: AffinityRoutingConfig;
}

/** The whole normalized edge.yaml. */
export interface EdgeConfig {
  readonly edge: EdgeSection;
  readonly logging: LoggingConfig;
  readonly metrics: MetricsConfig;
  readonly refresh: RefreshConfig;
  readonly bootstrap: BootstrapConfig;
  readonly console: ConsoleConfig;
  readonly openai: OpenAIConfig;
  readonly a2a: A2AConfig;
  readonly ui: UiConfig;
  readonly http: HttpConfig;
  readonly usage: UsageConfig;
  readonly tracing: TracingConfig;
  readonly cluster: ClusterConfig;
  readonly routing: RoutingConfig;
  readonly models: readonly ModelConfig[];
  readonly nodes: readonly NodeConfig[];
}

/** One problem found while loading a config. */
export interface ConfigIssue {
  /** YAML path, e.g. `nodes[0].providers[1].adapter`; '' for the document itself. */
  readonly path: string;
  /** 1-based line of the offending node when known. */
  readonly line?: number;
  readonly message: string;
  /** Stable code: yaml_syntax, type, required, unknown_key, enum, range, format, duplicate, reference, ... */
  readonly code: string;
}

export type ConfigLoadResult =
  | { readonly ok: true; readonly config: EdgeConfig }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

export type RefreshStatus = 'applied' | 'restart_required' | 'rejected';
export type RefreshChange = 'added' | 'removed' | 'modified';
export type RefreshClass = 'live' | 'restart' | 'invalid';

export interface RefreshReport {
  readonly path: string;
  readonly change: RefreshChange;
  readonly class: RefreshClass;
  readonly reason: string;
}

export interface RefreshClassification {
  readonly status: RefreshStatus;
  readonly mode: string;
  readonly changed_nodes: readonly string[];
  readonly changed_providers: readonly string[];
  readonly changed_models: readonly string[];
  readonly reports: readonly RefreshReport[];
}

export type RefreshMode = 'dry-run' | 'apply';
export const REFRESH_MODES: readonly RefreshMode[] = ['dry-run', 'apply'];

/** Which rule chose the config path: --config, IOP_EDGE_CONFIG, ./edge.yaml, executable-adjacent, repo. */
export type ConfigPathSource = 'flag' | 'env' | 'bundle' | 'executable' | 'repo';

export interface ResolveConfigPathInput {
  /** The --config flag value, if given. */
  readonly explicit?: string;
  readonly cwd: string;
  readonly execPath: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Injected for tests; defaults to fs.existsSync. */
  readonly exists?: (path: string) => boolean;
}

export interface ResolvedConfigPath {
  readonly path: string;
  readonly source: ConfigPathSource;
}

export interface ConfigTemplateOptions {
  /** Written as bootstrap.public_url, e.g. http://192.0.2.10:19091. */
  readonly publicUrl: string;
  readonly edgeId?: string;
  /** Node transport listen address; default 0.0.0.0:19090. */
  readonly listen?: string;
  readonly dataDir?: string;
  /** The edge's certificate and key (written as edge.tls, enabled); none = a plaintext template. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Written as refresh.admin_token (the admin API and the dashboard then require it); none = ''. */
  readonly adminToken?: string;
}
