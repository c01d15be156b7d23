// Turns the raw document into an EdgeConfig: applies defaults, folds the legacy adapter forms into named
// instances and resolves relative paths. It is defensive about types (a wrong-typed value falls back to its
// default) so reference checks can still run on a document with structural errors and every problem is reported
// in one pass; the structural issues themselves come from validate-structure.ts.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isRecord, type PathSegment, type PendingIssue } from './config-path.js';
import { DEFAULTS } from './limits.js';
import { resolveAdapterReference } from './resolve-adapter.js';
import {
  CLI_MODES,
  CLI_OUTPUT_FORMATS,
  DEFAULT_DISCOVERY_LOCAL_PORTS,
  LIFECYCLE_CAPABILITIES,
  LOG_FORMATS,
  LOG_LEVELS,
  PROVIDER_CATEGORIES,
  TOKEN_BUDGET_PERIODS,
  ADMIN_ROLES,
  KEY_PRIORITIES,
  type AdminKeyConfig,
  type AdapterInstanceConfig,
  type ApiKeyConfig,
  type CliAdapterInstanceConfig,
  type CliMode,
  type CliProfileConfig,
  type EdgeConfig,
  type ModelConfig,
  type NodeConfig,
  type OllamaAdapterInstanceConfig,
  type OpenAICompatAdapterInstanceConfig,
  type ProviderConfig,
  type RoutingConfig,
} from './types.js';

type Raw = Record<string, unknown>;

export interface NormalizeOptions {
  /** Directory relative file paths (data_dir, tls files, artifact_dir) resolve against; none = keep as written. */
  readonly baseDir?: string;
}

export interface NormalizedDocument {
  readonly config: EdgeConfig;
  /** Source path of nodes[i].adapters.instances[j] in the file, for issue paths. */
  readonly instanceSources: readonly (readonly PathSegment[][])[];
  /** Problems only visible while normalizing (e.g. a CLI mode contradicting `persistent`). */
  readonly issues: readonly PendingIssue[];
}

interface Context {
  readonly baseDir: string | undefined;
  readonly issues: PendingIssue[];
}

export function normalizeDocument(data: unknown, options: NormalizeOptions = {}): NormalizedDocument {
  const context: Context = { baseDir: options.baseDir, issues: [] };
  const root = record(data);
  const edge = record(root.edge);
  const tls = record(edge.tls);
  const logging = record(root.logging);
  const metrics = record(root.metrics);
  const refresh = record(root.refresh);
  const bootstrap = record(root.bootstrap);
  const consoleSection = record(root.console);
  const openai = record(root.openai);
  const a2a = record(root.a2a);
  const usage = record(root.usage);
  const tracing = record(root.tracing);
  const cluster = record(root.cluster);
  const nats = record(cluster.nats);
  const natsTls = record(nats.tls);
  const ui = record(root.ui);
  const httpSection = record(root.http);
  const instanceSources: PathSegment[][][] = [];
  const nodes = list(root.nodes).map((rawNode, index) => {
    const { node, sources } = normalizeNode(record(rawNode), index, context);
    instanceSources.push(sources);
    return node;
  });

  const config: EdgeConfig = {
    edge: {
      id: str(edge.id, DEFAULTS.edge_id),
      listen: str(edge.listen, DEFAULTS.edge_listen),
      data_dir: filePath(str(edge.data_dir, DEFAULTS.data_dir), context),
      tls: {
        enabled: bool(tls.enabled, false),
        cert_file: filePath(str(tls.cert_file, ''), context),
        key_file: filePath(str(tls.key_file, ''), context),
      },
      register_timeout_ms: int(edge.register_timeout_ms, DEFAULTS.register_timeout_ms),
      heartbeat_interval_ms: int(edge.heartbeat_interval_ms, DEFAULTS.heartbeat_interval_ms),
      heartbeat_timeout_ms: int(edge.heartbeat_timeout_ms, DEFAULTS.heartbeat_timeout_ms),
    },
    logging: {
      level: oneOf(logging.level, LOG_LEVELS, DEFAULTS.logging_level),
      format: oneOf(logging.format, LOG_FORMATS, DEFAULTS.logging_format),
    },
    metrics: { enabled: bool(metrics.enabled, false), listen: str(metrics.listen, DEFAULTS.metrics_listen) },
    refresh: {
      enabled: bool(refresh.enabled, true),
      listen: str(refresh.listen, DEFAULTS.refresh_listen),
      admin_token: str(refresh.admin_token, ''),
      admin_keys: list(refresh.admin_keys).map((value, index) => normalizeAdminKey(value, index, context)),
    },
    bootstrap: {
      listen: str(bootstrap.listen, DEFAULTS.bootstrap_listen),
      public_url: str(bootstrap.public_url, ''),
      artifact_dir: filePath(str(bootstrap.artifact_dir, DEFAULTS.artifact_dir), context),
      edge_address: str(bootstrap.edge_address, ''),
    },
    console: {
      node: str(consoleSection.node, ''),
      adapter: str(consoleSection.adapter, DEFAULTS.console_adapter),
      target: str(consoleSection.target, ''),
      session_id: str(consoleSection.session_id, DEFAULTS.console_session_id),
    },
    openai: {
      enabled: bool(openai.enabled, false),
      listen: str(openai.listen, DEFAULTS.openai_listen),
      adapter: str(openai.adapter, ''),
      target: str(openai.target, ''),
      models: strings(openai.models),
      session_id: str(openai.session_id, DEFAULTS.openai_session_id),
      timeout_sec: int(openai.timeout_sec, DEFAULTS.openai_timeout_sec),
      strict_output: bool(openai.strict_output, false),
      strict_stream_buffer: bool(openai.strict_stream_buffer, false),
      api_keys: list(openai.api_keys).map((value, index) => normalizeApiKey(value, index, context)),
      allow_unauthenticated: bool(openai.allow_unauthenticated, false),
      model_routes: list(openai.model_routes).map((value) => {
        const route = record(value);
        return {
          model: str(route.model, ''),
          adapter: str(route.adapter, ''),
          target: str(route.target, ''),
          node: str(route.node, ''),
          workspace_required: bool(route.workspace_required, false),
        };
      }),
      responses: {
        store_ttl_days: int(record(openai.responses).store_ttl_days, DEFAULTS.responses_store_ttl_days),
        store_max_per_key: int(
          record(openai.responses).store_max_per_key,
          DEFAULTS.responses_store_max_per_key,
        ),
      },
    },
    a2a: {
      enabled: bool(a2a.enabled, false),
      listen: str(a2a.listen, DEFAULTS.a2a_listen),
      path: str(a2a.path, DEFAULTS.a2a_path),
      node: str(a2a.node, ''),
      adapter: str(a2a.adapter, ''),
      target: str(a2a.target, ''),
      session_id: str(a2a.session_id, DEFAULTS.a2a_session_id),
      timeout_sec: int(a2a.timeout_sec, DEFAULTS.a2a_timeout_sec),
      bearer_token: str(a2a.bearer_token, ''),
      allow_unauthenticated: bool(a2a.allow_unauthenticated, false),
      public_url: str(a2a.public_url, ''),
      push: {
        allow_hosts: strings(record(a2a.push).allow_hosts),
        max_attempts: int(record(a2a.push).max_attempts, DEFAULTS.push_max_attempts),
        retry_window_sec: int(record(a2a.push).retry_window_sec, DEFAULTS.push_retry_window_sec),
        timeout_ms: int(record(a2a.push).timeout_ms, DEFAULTS.push_timeout_ms),
      },
    },
    ui: { enabled: bool(ui.enabled, false), listen: str(ui.listen, DEFAULTS.ui_listen) },
    http: { allowed_hosts: strings(httpSection.allowed_hosts) },
    usage: {
      retention_days: int(usage.retention_days, DEFAULTS.usage_retention_days),
      reserve_max_tokens: int(usage.reserve_max_tokens, DEFAULTS.usage_reserve_max_tokens),
    },
    tracing: {
      enabled: bool(tracing.enabled, false),
      otlp_endpoint: str(tracing.otlp_endpoint, ''),
      sample_ratio:
        typeof tracing.sample_ratio === 'number' ? tracing.sample_ratio : DEFAULTS.tracing_sample_ratio,
    },
    cluster: {
      enabled: bool(cluster.enabled, false),
      fabric_key_file: filePath(str(cluster.fabric_key_file, ''), context),
      nats: {
        servers: list(nats.servers).filter((server): server is string => typeof server === 'string'),
        allow_plaintext: bool(nats.allow_plaintext, false),
        credentials_file: str(nats.credentials_file, ''),
        tls: {
          enabled: bool(natsTls.enabled, false),
          ca_file: str(natsTls.ca_file, ''),
          cert_file: str(natsTls.cert_file, ''),
          key_file: str(natsTls.key_file, ''),
        },
      },
      heartbeat_ms: int(cluster.heartbeat_ms, DEFAULTS.cluster_heartbeat_ms),
      state_ttl_ms: int(cluster.state_ttl_ms, DEFAULTS.cluster_state_ttl_ms),
    },
    routing: normalizeRouting(record(root.routing)),
    models: list(root.models).map((value) => normalizeModel(record(value))),
    nodes,
  };
  return { config, instanceSources, issues: context.issues };
}

function normalizeModel(model: Raw): ModelConfig {
  const id = str(model.id, '');
  return {
    id,
    display_name: str(model.display_name, '') || id,
    providers: stringMap(model.providers),
    default_max_tokens: nullableInt(model.default_max_tokens),
    min_max_tokens: nullableInt(model.min_max_tokens),
    default_thinking_token_budget: nullableInt(model.default_thinking_token_budget),
    drop_unsupported: bool(model.drop_unsupported, false),
    fetch_image_urls: bool(model.fetch_image_urls, false),
    image_limits: {
      max_urls: int(record(model.image_limits).max_urls, DEFAULTS.image_max_urls),
      max_total_bytes: int(record(model.image_limits).max_total_bytes, DEFAULTS.image_max_total_bytes),
    },
    affinity: normalizeModelAffinity(record(model.affinity)),
    retry: { max_attempts: nullableInt(record(model.retry).max_attempts) },
  };
}

// Conversation affinity (issue 32).
function normalizeModelAffinity(affinity: Raw): ModelConfig['affinity'] {
  return {
    enabled: bool(affinity.enabled, true),
    hash_messages: bool(affinity.hash_messages, true),
    max_wait_ms: int(affinity.max_wait_ms, DEFAULTS.affinity_max_wait_ms),
  };
}

function normalizeRouting(routing: Raw): RoutingConfig {
  const retry = record(routing.retry);
  const breaker = record(routing.circuit_breaker);
  const affinity = record(routing.affinity);
  return {
    retry: { max_attempts: int(retry.max_attempts, DEFAULTS.retry_max_attempts) },
    circuit_breaker: {
      consecutive_failures: int(breaker.consecutive_failures, DEFAULTS.circuit_consecutive_failures),
      failure_rate:
        typeof breaker.failure_rate === 'number' ? breaker.failure_rate : DEFAULTS.circuit_failure_rate,
      window_ms: int(breaker.window_ms, DEFAULTS.circuit_window_ms),
      min_requests: int(breaker.min_requests, DEFAULTS.circuit_min_requests),
      cooldown_ms: int(breaker.cooldown_ms, DEFAULTS.circuit_cooldown_ms),
    },
    affinity: {
      max_entries: int(affinity.max_entries, DEFAULTS.affinity_max_entries),
      ttl_ms: int(affinity.ttl_ms, DEFAULTS.affinity_ttl_ms),
    },
  };
}

/**
 * A plain string is a key without limits named after its digest; an object names its id and limits and gives
 * exactly one of `key` (clear text) or `key_sha256` (digest only).
 */
function normalizeApiKey(value: unknown, index: number, context: Context): ApiKeyConfig {
  if (typeof value === 'string') {
    const digest = sha256Hex(value);
    return { ...UNLIMITED_KEY, id: `key-${digest.slice(0, 8)}`, key: value, key_sha256: digest };
  }
  const entry = record(value);
  const key = str(entry.key, '');
  const storedDigest = str(entry.key_sha256, '').toLowerCase();
  if ((key === '') === (storedDigest === '')) {
    context.issues.push({
      segments: ['openai', 'api_keys', index],
      code: 'required',
      message: 'needs exactly one of key or key_sha256',
    });
  }
  const budget = record(entry.token_budget);
  const tokens = nullableInt(budget.tokens);
  return {
    id: str(entry.id, ''),
    key,
    key_sha256: key !== '' ? sha256Hex(key) : storedDigest,
    models: strings(entry.models),
    rpm: nullableInt(entry.rpm),
    tpm: nullableInt(entry.tpm),
    max_concurrent: nullableInt(entry.max_concurrent),
    token_budget: tokens === null ? null : { tokens, per: oneOf(budget.per, TOKEN_BUDGET_PERIODS, 'day') },
    weight: int(entry.weight, DEFAULTS.key_weight),
    priority: oneOf(entry.priority, KEY_PRIORITIES, DEFAULTS.key_priority),
  };
}

/** An admin key: id, role and exactly one of `key` / `key_sha256`, like an API key. */
function normalizeAdminKey(value: unknown, index: number, context: Context): AdminKeyConfig {
  const entry = record(value);
  const key = str(entry.key, '');
  const storedDigest = str(entry.key_sha256, '').toLowerCase();
  if ((key === '') === (storedDigest === '')) {
    context.issues.push({
      segments: ['refresh', 'admin_keys', index],
      code: 'required',
      message: 'needs exactly one of key or key_sha256',
    });
  }
  return {
    id: str(entry.id, ''),
    key,
    key_sha256: key !== '' ? sha256Hex(key) : storedDigest,
    role: oneOf(entry.role, ADMIN_ROLES, 'read'),
  };
}

const UNLIMITED_KEY = {
  models: [],
  rpm: null,
  tpm: null,
  max_concurrent: null,
  token_budget: null,
  weight: DEFAULTS.key_weight,
  priority: DEFAULTS.key_priority,
} as const satisfies Partial<ApiKeyConfig>;

function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function normalizeNode(
  node: Raw,
  index: number,
  context: Context,
): { node: NodeConfig; sources: PathSegment[][] } {
  const id = str(node.id, '');
  const runtime = record(node.runtime);
  const adapters = record(node.adapters);
  const nodePath: PathSegment[] = ['nodes', index];
  const instances: AdapterInstanceConfig[] = [];
  const sources: PathSegment[][] = [];
  const add = (instance: AdapterInstanceConfig, source: PathSegment[]): void => {
    instances.push(instance);
    sources.push(source);
  };
  const adaptersPath = [...nodePath, 'adapters'];
  // Legacy single blocks first, in a fixed order, then the named forms in file order.
  const legacy = (key: string): { raw: Raw; source: PathSegment[] } | undefined => {
    const raw = adapters[key];
    return isRecord(raw) ? { raw, source: [...adaptersPath, key] } : undefined;
  };
  const cli = legacy('cli');
  if (cli) add(cliInstance('cli', cli.raw, cli.source, context), cli.source);
  const ollama = legacy('ollama');
  if (ollama) add(ollamaInstance('ollama', ollama.raw), ollama.source);
  const openAICompat = legacy('openai_compat');
  if (openAICompat) add(openAICompatInstance('openai_compat', openAICompat.raw, ''), openAICompat.source);
  const vllm = legacy('vllm');
  if (vllm) add(openAICompatInstance('vllm', vllm.raw, 'vllm'), vllm.source);
  for (const [name, value] of Object.entries(record(adapters.openai_compat_instances))) {
    add(openAICompatInstance(name, record(value), ''), [...adaptersPath, 'openai_compat_instances', name]);
  }
  list(adapters.instances).forEach((value, position) => {
    const raw = record(value);
    const name = str(raw.name, '');
    const source: PathSegment[] = [...adaptersPath, 'instances', position];
    switch (raw.type) {
      case 'cli':
        add(cliInstance(name, raw, source, context), source);
        break;
      case 'ollama':
        add(ollamaInstance(name, raw), source);
        break;
      case 'openai_compat':
        add(openAICompatInstance(name, raw, ''), source);
        break;
      default:
        // A missing or unknown type is a structural issue already; the instance cannot be modelled.
        break;
    }
  });

  const providers = list(node.providers).map((value) => normalizeProvider(record(value), instances));
  return {
    node: {
      id,
      alias: str(node.alias, '') || id,
      agent_kind: str(node.agent_kind, DEFAULTS.agent_kind),
      token: str(node.token, ''),
      token_sha256: str(node.token_sha256, '').toLowerCase(),
      runtime: {
        max_concurrency: int(runtime.max_concurrency, DEFAULTS.max_concurrency),
        health_probe_interval_ms: int(runtime.health_probe_interval_ms, DEFAULTS.health_probe_interval_ms),
        resident_poll_interval_ms: int(runtime.resident_poll_interval_ms, DEFAULTS.resident_poll_interval_ms),
      },
      adapters: { instances },
      providers,
      discovery: {
        openai_compat_urls: strings(record(node.discovery).openai_compat_urls),
        local_ports: Array.isArray(record(node.discovery).local_ports)
          ? list(record(node.discovery).local_ports).filter((port): port is number => Number.isInteger(port))
          : [...DEFAULT_DISCOVERY_LOCAL_PORTS],
      },
    },
    sources,
  };
}

function normalizeProvider(provider: Raw, instances: readonly AdapterInstanceConfig[]): ProviderConfig {
  const adapter = str(provider.adapter, '');
  const resolution = resolveAdapterReference(instances, adapter);
  return {
    id: str(provider.id, ''),
    type: str(provider.type, ''),
    category: oneOf(provider.category, PROVIDER_CATEGORIES, 'api'),
    adapter,
    adapter_instance: resolution.ok ? resolution.instance.name : null,
    models: strings(provider.models),
    capacity: int(provider.capacity, DEFAULTS.capacity),
    max_queue: int(provider.max_queue, DEFAULTS.max_queue),
    queue_timeout_ms: int(provider.queue_timeout_ms, DEFAULTS.queue_timeout_ms),
    enabled: bool(provider.enabled, true),
    priority: int(provider.priority, DEFAULTS.priority),
    lifecycle_capabilities: strings(provider.lifecycle_capabilities).filter(
      (value): value is (typeof LIFECYCLE_CAPABILITIES)[number] =>
        (LIFECYCLE_CAPABILITIES as readonly string[]).includes(value),
    ),
    health: providerHealth(record(provider.health)),
  };
}

function providerHealth(raw: Raw): ProviderConfig['health'] {
  return {
    enabled: bool(raw.enabled, true),
    interval_ms: raw.interval_ms === undefined || raw.interval_ms === null ? null : int(raw.interval_ms, 0),
  };
}

function cliInstance(
  name: string,
  raw: Raw,
  source: PathSegment[],
  context: Context,
): CliAdapterInstanceConfig {
  const fabricModel = str(raw.fabric_model, '');
  const profiles: Record<string, CliProfileConfig> = {};
  for (const [profileName, value] of Object.entries(record(raw.profiles))) {
    profiles[profileName] = cliProfile(
      record(value),
      [...source, 'profiles', profileName],
      context,
      fabricModel,
    );
  }
  return {
    name,
    type: 'cli',
    enabled: bool(raw.enabled, true),
    profiles,
    max_sessions: int(raw.max_sessions, DEFAULTS.max_sessions),
    session_idle_ttl_ms: int(raw.session_idle_ttl_ms, DEFAULTS.session_idle_ttl_ms),
    workspace_roots: strings(raw.workspace_roots),
    run_as: str(raw.run_as, ''),
    fabric_model: fabricModel,
  };
}

const PERSISTENT_MODES: readonly CliMode[] = ['persistent', 'persistent-lazy'];

function cliProfile(
  raw: Raw,
  source: PathSegment[],
  context: Context,
  instanceFabricModel: string,
): CliProfileConfig {
  const explicitMode = typeof raw.mode === 'string' && (CLI_MODES as readonly string[]).includes(raw.mode);
  const explicitPersistent = typeof raw.persistent === 'boolean' ? raw.persistent : undefined;
  const mode: CliMode = explicitMode
    ? (raw.mode as CliMode)
    : explicitPersistent === true
      ? 'persistent'
      : 'oneshot';
  const modeIsPersistent = PERSISTENT_MODES.includes(mode);
  if (explicitMode && explicitPersistent !== undefined && explicitPersistent !== modeIsPersistent) {
    context.issues.push({
      segments: [...source, 'persistent'],
      code: 'conflict',
      message: `persistent: ${String(explicitPersistent)} contradicts mode '${mode}' (${
        modeIsPersistent ? 'a persistent mode' : 'a one-shot mode'
      })`,
    });
  }
  return {
    command: str(raw.command, ''),
    args: strings(raw.args),
    env: stringMap(raw.env),
    mode,
    persistent: modeIsPersistent,
    terminal: bool(raw.terminal, false),
    resume_args: strings(raw.resume_args),
    output_format: oneOf(raw.output_format, CLI_OUTPUT_FORMATS, 'text'),
    idle_timeout_ms: int(raw.idle_timeout_ms, DEFAULTS.idle_timeout_ms),
    request_timeout_ms: int(raw.request_timeout_ms, DEFAULTS.cli_request_timeout_ms),
    result_grace_ms: int(raw.result_grace_ms, DEFAULTS.result_grace_ms),
    fabric_model: str(raw.fabric_model, instanceFabricModel),
  };
}

function ollamaInstance(name: string, raw: Raw): OllamaAdapterInstanceConfig {
  return {
    name,
    type: 'ollama',
    enabled: bool(raw.enabled, true),
    base_url: str(raw.base_url, ''),
    context_size: int(raw.context_size, DEFAULTS.context_size),
    request_timeout_ms: int(raw.request_timeout_ms, DEFAULTS.http_request_timeout_ms),
  };
}

function openAICompatInstance(
  name: string,
  raw: Raw,
  defaultProvider: string,
): OpenAICompatAdapterInstanceConfig {
  return {
    name,
    type: 'openai_compat',
    enabled: bool(raw.enabled, true),
    provider: str(raw.provider, defaultProvider || 'openai'),
    base_url: str(raw.base_url, ''),
    headers: stringMap(raw.headers),
    request_timeout_ms: int(raw.request_timeout_ms, DEFAULTS.http_request_timeout_ms),
  };
}

function filePath(value: string, context: Context): string {
  if (value === '' || context.baseDir === undefined) return value;
  return path.resolve(context.baseDir, value);
}

function record(value: unknown): Raw {
  return isRecord(value) ? value : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function int(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? value : fallback;
}

function nullableInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value)
    ? (value as T)
    : fallback;
}

function strings(value: unknown): string[] {
  return list(value).filter((item): item is string => typeof item === 'string');
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(record(value))) {
    if (typeof item === 'string') out[key] = item;
  }
  return out;
}
