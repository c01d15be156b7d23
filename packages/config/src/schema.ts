// The JSON schema of edge.yaml as written (before normalization): structure, types, enums and numeric bounds.
// Legacy adapter forms (`adapters.<type>`, `adapters.vllm`, `adapters.openai_compat_instances`) are part of the
// accepted shape. Cross-references (provider ids, adapter references, model → provider keys) are checked in
// code by validate-references.ts because JSON schema cannot express them. Bounds live in limits.ts so the
// schema, the defaults and the contract document share one source.
import { LIMITS, type Limit } from './limits.js';
import {
  ADMIN_ROLES,
  CLI_MODES,
  CLI_OUTPUT_FORMATS,
  LIFECYCLE_CAPABILITIES,
  LOG_FORMATS,
  LOG_LEVELS,
  PROVIDER_CATEGORIES,
  TOKEN_BUDGET_PERIODS,
  KEY_PRIORITIES,
} from './types.js';

type Schema = Record<string, unknown>;

/** Identifier of nodes, providers, adapter instances and CLI profiles: safe in paths, labels and URLs. */
export const IDENTIFIER_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

const bool: Schema = { type: 'boolean' };
const text: Schema = { type: 'string', maxLength: 4096 };
const nonEmptyText: Schema = { type: 'string', minLength: 1, maxLength: 4096 };
const identifier: Schema = { type: 'string', pattern: IDENTIFIER_PATTERN };
const listen: Schema = { type: 'string', format: 'listen-address' };
const httpUrl: Schema = { type: 'string', format: 'http-url' };
const optionalHttpUrl: Schema = { type: 'string', format: 'optional-http-url' };
/** A models[] id (`fabric_model`): the same form as `models[].id`; '' = none. */
const fabricModel: Schema = { type: 'string', maxLength: 256 };
const argList: Schema = { type: 'array', items: text, maxItems: 1024 };
const stringMap: Schema = {
  type: 'object',
  propertyNames: { minLength: 1, maxLength: 256 },
  additionalProperties: text,
};

function integer(limit: Limit): Schema {
  return { type: 'integer', minimum: limit.min, maximum: limit.max };
}

function nullableInteger(limit: Limit): Schema {
  return { type: ['integer', 'null'], minimum: limit.min, maximum: limit.max };
}

function extensible(properties: Record<string, Schema>): Schema {
  return { ...object(properties), patternProperties: { '^x-': {} } };
}

function object(properties: Record<string, Schema>, required: string[] = []): Schema {
  return { type: 'object', properties, required, additionalProperties: false };
}

const cliProfile = object(
  {
    command: nonEmptyText,
    args: argList,
    env: stringMap,
    mode: { type: 'string', enum: [...CLI_MODES] },
    persistent: bool,
    terminal: bool,
    resume_args: argList,
    output_format: { type: 'string', enum: [...CLI_OUTPUT_FORMATS] },
    idle_timeout_ms: integer(LIMITS.idle_timeout_ms),
    request_timeout_ms: integer(LIMITS.cli_request_timeout_ms),
    result_grace_ms: integer(LIMITS.result_grace_ms),
    fabric_model: fabricModel,
  },
  ['command'],
);

const cliSettings: Record<string, Schema> = {
  enabled: bool,
  profiles: {
    type: 'object',
    propertyNames: { pattern: IDENTIFIER_PATTERN },
    additionalProperties: cliProfile,
  },
  max_sessions: integer(LIMITS.max_sessions),
  session_idle_ttl_ms: integer(LIMITS.session_idle_ttl_ms),
  workspace_roots: { type: 'array', maxItems: 64, items: { type: 'string', minLength: 1, maxLength: 4096 } },
  run_as: { type: 'string', pattern: '^(|[a-z_][a-z0-9_-]{0,31})$' },
  fabric_model: fabricModel,
};

const ollamaSettings: Record<string, Schema> = {
  enabled: bool,
  base_url: httpUrl,
  context_size: integer(LIMITS.context_size),
  request_timeout_ms: integer(LIMITS.http_request_timeout_ms),
};

const openAICompatSettings: Record<string, Schema> = {
  enabled: bool,
  provider: nonEmptyText,
  base_url: httpUrl,
  headers: stringMap,
  request_timeout_ms: integer(LIMITS.http_request_timeout_ms),
};

const instanceName: Record<string, Schema> = { name: identifier };

const adapterInstance: Schema = {
  type: 'object',
  properties: { type: { type: 'string' } },
  required: ['type'],
  discriminator: { propertyName: 'type' },
  oneOf: [
    object({ ...instanceName, type: { const: 'cli' }, ...cliSettings }, ['name', 'type']),
    object({ ...instanceName, type: { const: 'ollama' }, ...ollamaSettings }, ['name', 'type', 'base_url']),
    object({ ...instanceName, type: { const: 'openai_compat' }, ...openAICompatSettings }, [
      'name',
      'type',
      'base_url',
    ]),
  ],
};

const adapters = object({
  cli: object(cliSettings),
  ollama: object(ollamaSettings, ['base_url']),
  openai_compat: object(openAICompatSettings, ['base_url']),
  vllm: object(openAICompatSettings, ['base_url']),
  openai_compat_instances: {
    type: 'object',
    propertyNames: { pattern: IDENTIFIER_PATTERN },
    additionalProperties: object(openAICompatSettings, ['base_url']),
  },
  instances: { type: 'array', items: adapterInstance, maxItems: 256 },
});

const provider = object(
  {
    id: identifier,
    type: { type: 'string', pattern: IDENTIFIER_PATTERN },
    category: { type: 'string', enum: [...PROVIDER_CATEGORIES] },
    adapter: identifier,
    models: { type: 'array', items: nonEmptyText, uniqueItems: true, maxItems: 1024 },
    capacity: integer(LIMITS.capacity),
    max_queue: integer(LIMITS.max_queue),
    queue_timeout_ms: integer(LIMITS.queue_timeout_ms),
    enabled: bool,
    priority: integer(LIMITS.priority),
    lifecycle_capabilities: {
      type: 'array',
      items: { type: 'string', enum: [...LIFECYCLE_CAPABILITIES] },
      uniqueItems: true,
    },
    health: object({ enabled: bool, interval_ms: integer(LIMITS.health_probe_interval_ms) }),
  },
  ['id', 'type', 'category', 'adapter'],
);

const node = object(
  {
    id: identifier,
    alias: identifier,
    agent_kind: identifier,
    token: text,
    token_sha256: { type: 'string', pattern: '^([0-9A-Fa-f]{64})?$' },
    runtime: object({
      max_concurrency: integer(LIMITS.max_concurrency),
      health_probe_interval_ms: integer(LIMITS.health_probe_interval_ms),
      resident_poll_interval_ms: integer(LIMITS.resident_poll_interval_ms),
    }),
    adapters,
    providers: { type: 'array', items: provider, maxItems: 1024 },
    discovery: object({
      openai_compat_urls: { type: 'array', items: httpUrl, maxItems: 64, uniqueItems: true },
      local_ports: {
        type: 'array',
        items: { type: 'integer', minimum: 1, maximum: 65535 },
        maxItems: 64,
        uniqueItems: true,
      },
    }),
  },
  ['id'],
);

const model = object(
  {
    id: { type: 'string', minLength: 1, maxLength: 256 },
    display_name: text,
    providers: {
      type: 'object',
      propertyNames: { pattern: IDENTIFIER_PATTERN },
      additionalProperties: nonEmptyText,
    },
    default_max_tokens: nullableInteger(LIMITS.max_tokens),
    min_max_tokens: nullableInteger(LIMITS.max_tokens),
    default_thinking_token_budget: nullableInteger(LIMITS.thinking_token_budget),
    drop_unsupported: bool,
    fetch_image_urls: bool,
    image_limits: object({
      max_urls: integer(LIMITS.image_max_urls),
      max_total_bytes: integer(LIMITS.image_max_total_bytes),
    }),
    affinity: object({
      enabled: bool,
      hash_messages: bool,
      max_wait_ms: integer(LIMITS.affinity_max_wait_ms),
    }),
    retry: object({ max_attempts: integer(LIMITS.retry_max_attempts) }),
  },
  ['id', 'providers'],
);

const modelRoute = object(
  {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    adapter: nonEmptyText,
    target: text,
    node: text,
    workspace_required: bool,
  },
  ['model', 'adapter'],
);

/** An API key: a plain secret (no limits) or a principal with limits; exactly one of key / key_sha256. */
const apiKey: Schema = {
  if: { type: 'string' },
  then: nonEmptyText,
  else: object(
    {
      id: identifier,
      key: text,
      key_sha256: { type: 'string', pattern: '^([0-9A-Fa-f]{64})?$' },
      models: { type: 'array', items: nonEmptyText, uniqueItems: true, maxItems: 4096 },
      rpm: nullableInteger(LIMITS.rpm),
      tpm: nullableInteger(LIMITS.tpm),
      max_concurrent: nullableInteger(LIMITS.max_concurrent),
      token_budget: object(
        {
          tokens: integer(LIMITS.budget_tokens),
          per: { type: 'string', enum: [...TOKEN_BUDGET_PERIODS] },
        },
        ['tokens', 'per'],
      ),
      weight: integer(LIMITS.key_weight),
      priority: { type: 'string', enum: [...KEY_PRIORITIES] },
    },
    ['id'],
  ),
};

/**
 * Schema of the whole edge.yaml document. Top-level `x-*` keys are free (compose-style) so YAML anchors can be
 * declared once and merged where needed; they are ignored after loading.
 */
export const edgeConfigSchema: Schema = extensible({
  edge: object({
    id: identifier,
    listen,
    data_dir: nonEmptyText,
    tls: object({ enabled: bool, cert_file: text, key_file: text }),
    register_timeout_ms: integer(LIMITS.register_timeout_ms),
    heartbeat_interval_ms: integer(LIMITS.heartbeat_interval_ms),
    heartbeat_timeout_ms: integer(LIMITS.heartbeat_timeout_ms),
  }),
  logging: object({
    level: { type: 'string', enum: [...LOG_LEVELS] },
    format: { type: 'string', enum: [...LOG_FORMATS] },
  }),
  metrics: object({ enabled: bool, listen }),
  refresh: object({
    enabled: bool,
    listen,
    admin_token: text,
    admin_keys: {
      type: 'array',
      maxItems: 256,
      items: object(
        {
          id: identifier,
          key: text,
          key_sha256: { type: 'string', pattern: '^([0-9A-Fa-f]{64})?$' },
          role: { type: 'string', enum: [...ADMIN_ROLES] },
        },
        ['id', 'role'],
      ),
    },
  }),
  bootstrap: object({
    listen,
    public_url: optionalHttpUrl,
    artifact_dir: nonEmptyText,
    edge_address: { type: 'string', anyOf: [{ maxLength: 0 }, { format: 'listen-address-list' }] },
  }),
  console: object({ node: text, adapter: text, target: text, session_id: text }),
  openai: object({
    enabled: bool,
    listen,
    adapter: text,
    target: text,
    models: { type: 'array', items: nonEmptyText, uniqueItems: true },
    session_id: text,
    timeout_sec: integer(LIMITS.timeout_sec),
    strict_output: bool,
    strict_stream_buffer: bool,
    api_keys: { type: 'array', items: apiKey, maxItems: 1024 },
    allow_unauthenticated: bool,
    model_routes: { type: 'array', items: modelRoute, maxItems: 4096 },
    responses: object({
      store_ttl_days: integer(LIMITS.responses_store_ttl_days),
      store_max_per_key: integer(LIMITS.responses_store_max_per_key),
    }),
  }),
  a2a: object({
    enabled: bool,
    listen,
    path: { type: 'string', pattern: '^/[^\\s?#]*$' },
    node: text,
    adapter: text,
    target: text,
    session_id: text,
    timeout_sec: integer(LIMITS.timeout_sec),
    bearer_token: text,
    allow_unauthenticated: bool,
    public_url: optionalHttpUrl,
    push: object({
      allow_hosts: {
        type: 'array',
        items: { type: 'string', format: 'host-authority' },
        maxItems: 256,
        uniqueItems: true,
      },
      max_attempts: integer(LIMITS.push_max_attempts),
      retry_window_sec: integer(LIMITS.push_retry_window_sec),
      timeout_ms: integer(LIMITS.push_timeout_ms),
    }),
  }),
  ui: object({ enabled: bool, listen }),
  http: object({
    allowed_hosts: {
      type: 'array',
      items: { type: 'string', format: 'host-authority' },
      maxItems: 256,
      uniqueItems: true,
    },
  }),
  usage: object({
    retention_days: integer(LIMITS.retention_days),
    reserve_max_tokens: integer(LIMITS.reserve_max_tokens),
  }),
  tracing: object({
    enabled: bool,
    otlp_endpoint: optionalHttpUrl,
    sample_ratio: { type: 'number', minimum: 0, maximum: 1 },
  }),
  cluster: object({
    enabled: bool,
    fabric_key_file: text,
    nats: object({
      servers: { type: 'array', items: nonEmptyText, maxItems: 64, uniqueItems: true },
      allow_plaintext: bool,
      credentials_file: text,
      tls: object({ enabled: bool, ca_file: text, cert_file: text, key_file: text }),
    }),
    heartbeat_ms: integer(LIMITS.cluster_heartbeat_ms),
    state_ttl_ms: integer(LIMITS.cluster_state_ttl_ms),
  }),
  routing: object({
    // Conversation affinity (issue 32).
    affinity: object({
      max_entries: integer(LIMITS.affinity_max_entries),
      ttl_ms: integer(LIMITS.affinity_ttl_ms),
    }),
    // Retry before the first byte and passive health (issue 32).
    retry: object({ max_attempts: integer(LIMITS.retry_max_attempts) }),
    circuit_breaker: object({
      consecutive_failures: integer(LIMITS.circuit_consecutive_failures),
      failure_rate: { type: 'number', minimum: 0, maximum: 1 },
      window_ms: integer(LIMITS.circuit_window_ms),
      min_requests: integer(LIMITS.circuit_min_requests),
      cooldown_ms: integer(LIMITS.circuit_cooldown_ms),
    }),
  }),
  models: { type: 'array', items: model, maxItems: 4096 },
  nodes: { type: 'array', items: node, maxItems: 4096 },
});
