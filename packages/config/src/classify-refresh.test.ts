import { describe, expect, it } from '@jest/globals';
import { parse, stringify } from 'yaml';
import { classifyRefresh } from './classify-refresh.js';
import { formatIssue } from './format-issue.js';
import { parseConfigText } from './load-config.js';
import type { ConfigLoadResult, EdgeConfig, RefreshClass } from './types.js';

const BASE = `
edge: { id: e1, listen: "0.0.0.0:19090", data_dir: "/var/lib/iop", register_timeout_ms: 10000,
        heartbeat_interval_ms: 5000, heartbeat_timeout_ms: 15000, tls: { enabled: false } }
logging: { level: info, format: json }
metrics: { enabled: true, listen: "127.0.0.1:19092" }
refresh: { enabled: true, listen: "127.0.0.1:19093", admin_token: "" }
bootstrap: { listen: "0.0.0.0:19091", public_url: "http://192.0.2.1:19091", artifact_dir: "/srv/art" }
console: { node: "", adapter: cli, target: fake, session_id: default }
openai: { enabled: true, listen: "127.0.0.1:18081", api_keys: ["k1"], model_routes: [{ model: r1, adapter: cli, target: fake }] }
a2a: { enabled: true, listen: "127.0.0.1:18082", bearer_token: "" }
models:
  - { id: m1, display_name: "Model 1", providers: { p-vllm: served-1, p-ollama: local-1 },
      default_max_tokens: 1000, min_max_tokens: 10, default_thinking_token_budget: 100 }
nodes:
  - id: n1
    alias: node-one
    token: "t1"
    runtime: { max_concurrency: 4, health_probe_interval_ms: 30000 }
    adapters:
      cli:
        max_sessions: 8
        profiles:
          fake: { command: "bin/fake", args: ["-a"], env: { A: "1" }, mode: persistent, idle_timeout_ms: 1000,
                  resume_args: ["--resume"], request_timeout_ms: 60000, result_grace_ms: 1000 }
          shot: { command: "shot", mode: oneshot, output_format: text }
      ollama: { base_url: "http://127.0.0.1:11434", context_size: 8192, request_timeout_ms: 60000 }
      instances:
        - { name: gpu, type: openai_compat, provider: vllm, base_url: "http://gpu:8000/v1", headers: { X-K: v },
            request_timeout_ms: 60000 }
    providers:
      - { id: p-cli, type: cli, category: cli, adapter: cli, models: [fake], capacity: 2, max_queue: 4,
          queue_timeout_ms: 1000, priority: 0, lifecycle_capabilities: [] }
      - { id: p-ollama, type: ollama, category: local_inference, adapter: ollama, models: [local-1], capacity: 1,
          lifecycle_capabilities: [list_models] }
      - { id: p-vllm, type: vllm, category: api, adapter: gpu, models: [served-1], capacity: 4 }
  - id: n2
    adapters: { ollama: { base_url: "http://10.0.0.2:11434" } }
    providers: [{ id: p-n2, type: ollama, category: api, adapter: ollama }]
`;

type Raw = Record<string, unknown> & {
  edge: Record<string, unknown>;
  models: Record<string, unknown>[];
  nodes: (Record<string, unknown> & {
    runtime: Record<string, unknown>;
    adapters: Record<string, Record<string, unknown>> & { instances: Record<string, unknown>[] };
    providers: Record<string, unknown>[];
  })[];
};

function loadBase(): EdgeConfig {
  const result = parseConfigText(BASE, 'base.yaml');
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
  return result.config;
}

function candidate(mutate: (raw: Raw) => void): ConfigLoadResult {
  const raw = parse(BASE) as Raw;
  mutate(raw);
  return parseConfigText(stringify(raw), 'candidate.yaml');
}

const node = (raw: Raw) => raw.nodes[0];
const profile = (raw: Raw, name = 'fake') =>
  (node(raw).adapters.cli.profiles as Record<string, Record<string, unknown>>)[name];
const provider = (raw: Raw, id: string) => node(raw).providers.find((entry) => entry.id === id)!;

interface Case {
  name: string;
  mutate: (raw: Raw) => void;
  path: string;
  change?: 'added' | 'removed' | 'modified';
  class: RefreshClass;
}

const live: Case[] = [
  {
    name: 'routing.affinity bounds (added section)',
    mutate: (r) => (r.routing = { affinity: { max_entries: 50 } }),
    path: 'routing.affinity.max_entries',
    class: 'live',
  },
  {
    name: 'models[].affinity',
    mutate: (r) => (r.models[0].affinity = { max_wait_ms: 200 }),
    path: 'models[m1].affinity.max_wait_ms',
    class: 'live',
  },
  {
    name: 'models[].image_limits',
    mutate: (r) => (r.models[0].image_limits = { max_urls: 4 }),
    path: 'models[m1].image_limits.max_urls',
    class: 'live',
  },
  {
    name: 'routing retry max_attempts',
    mutate: (r) => (r.routing = { retry: { max_attempts: 3 } }),
    path: 'routing.retry.max_attempts',
    class: 'live',
  },
  {
    name: 'routing circuit_breaker cooldown_ms',
    mutate: (r) => (r.routing = { circuit_breaker: { cooldown_ms: 900 } }),
    path: 'routing.circuit_breaker.cooldown_ms',
    class: 'live',
  },
  {
    name: 'model retry max_attempts',
    mutate: (r) => (r.models[0].retry = { max_attempts: 1 }),
    path: 'models[m1].retry.max_attempts',
    class: 'live',
  },
  {
    name: 'provider capacity',
    mutate: (r) => (provider(r, 'p-cli').capacity = 3),
    path: 'nodes[n1].providers[p-cli].capacity',
    class: 'live',
  },
  {
    name: 'provider priority',
    mutate: (r) => (provider(r, 'p-cli').priority = 5),
    path: 'nodes[n1].providers[p-cli].priority',
    class: 'live',
  },
  {
    name: 'provider max_queue',
    mutate: (r) => (provider(r, 'p-cli').max_queue = 9),
    path: 'nodes[n1].providers[p-cli].max_queue',
    class: 'live',
  },
  {
    name: 'provider queue_timeout_ms',
    mutate: (r) => (provider(r, 'p-cli').queue_timeout_ms = 5),
    path: 'nodes[n1].providers[p-cli].queue_timeout_ms',
    class: 'live',
  },
  {
    name: 'provider enabled',
    mutate: (r) => (provider(r, 'p-cli').enabled = false),
    path: 'nodes[n1].providers[p-cli].enabled',
    class: 'live',
  },
  {
    name: 'model display_name',
    mutate: (r) => (r.models[0].display_name = 'M'),
    path: 'models[m1].display_name',
    class: 'live',
  },
  {
    name: 'model provider mapping',
    mutate: (r) => ((r.models[0].providers as Record<string, string>)['p-vllm'] = 'other'),
    path: 'models[m1].providers.p-vllm',
    class: 'live',
  },
  {
    name: 'model provider removed from mapping',
    mutate: (r) => delete (r.models[0].providers as Record<string, string>)['p-ollama'],
    path: 'models[m1].providers.p-ollama',
    change: 'removed',
    class: 'live',
  },
  {
    name: 'model default_max_tokens',
    mutate: (r) => (r.models[0].default_max_tokens = 2000),
    path: 'models[m1].default_max_tokens',
    class: 'live',
  },
  {
    name: 'model min_max_tokens',
    mutate: (r) => (r.models[0].min_max_tokens = 20),
    path: 'models[m1].min_max_tokens',
    class: 'live',
  },
  {
    name: 'model default_thinking_token_budget',
    mutate: (r) => (r.models[0].default_thinking_token_budget = 5),
    path: 'models[m1].default_thinking_token_budget',
    class: 'live',
  },
  {
    name: 'model added',
    mutate: (r) => r.models.push({ id: 'm2', providers: { 'p-cli': 'fake' } }),
    path: 'models[m2]',
    change: 'added',
    class: 'live',
  },
  {
    name: 'model removed',
    mutate: (r) => (r.models = []),
    path: 'models[m1]',
    change: 'removed',
    class: 'live',
  },
  {
    name: 'node runtime.max_concurrency',
    mutate: (r) => (node(r).runtime.max_concurrency = 8),
    path: 'nodes[n1].runtime.max_concurrency',
    class: 'live',
  },
  {
    name: 'node runtime.health_probe_interval_ms',
    mutate: (r) => (node(r).runtime.health_probe_interval_ms = 1000),
    path: 'nodes[n1].runtime.health_probe_interval_ms',
    class: 'live',
  },
  {
    name: 'node runtime.resident_poll_interval_ms',
    mutate: (r) => (node(r).runtime.resident_poll_interval_ms = 2000),
    path: 'nodes[n1].runtime.resident_poll_interval_ms',
    class: 'live',
  },
  {
    name: 'node discovery.openai_compat_urls',
    mutate: (r) => (node(r).discovery = { openai_compat_urls: ['http://10.0.0.9:8000/v1'] }),
    path: 'nodes[n1].discovery.openai_compat_urls',
    class: 'live',
  },
  {
    name: 'node discovery.local_ports',
    mutate: (r) => (node(r).discovery = { local_ports: [] }),
    path: 'nodes[n1].discovery.local_ports',
    class: 'live',
  },
  {
    name: 'node added without a token or alias (store-registered node adopted)',
    mutate: (r) => r.nodes.push({ id: 'n3' } as unknown as Raw['nodes'][number]),
    path: 'nodes[n3]',
    change: 'added',
    class: 'live',
  },
  {
    name: 'provider added with a node that joins live',
    mutate: (r) =>
      r.nodes.push({
        id: 'n3',
        providers: [{ id: 'p-n3', type: 'cli', category: 'cli', adapter: 'cli' }],
        adapters: { cli: { profiles: { fake: { command: 'fake' } } } },
      } as unknown as Raw['nodes'][number]),
    path: 'nodes[n3].providers[p-n3]',
    change: 'added',
    class: 'live',
  },
  {
    name: 'adapter instance added',
    mutate: (r) => node(r).adapters.instances.push({ name: 'gpu2', type: 'ollama', base_url: 'http://h:1' }),
    path: 'nodes[n1].adapters.instances[gpu2]',
    change: 'added',
    class: 'live',
  },
  {
    name: 'provider added to a known node',
    mutate: (r) => node(r).providers.push({ id: 'p-new', type: 'cli', category: 'cli', adapter: 'cli' }),
    path: 'nodes[n1].providers[p-new]',
    change: 'added',
    class: 'live',
  },
];

const restart: Case[] = [
  { name: 'edge id', mutate: (r) => (r.edge.id = 'e2'), path: 'edge.id', class: 'restart' },
  {
    name: 'edge listen',
    mutate: (r) => (r.edge.listen = '0.0.0.0:29090'),
    path: 'edge.listen',
    class: 'restart',
  },
  {
    name: 'edge tls',
    mutate: (r) => (r.edge.tls = { enabled: true, cert_file: '/c', key_file: '/k' }),
    path: 'edge.tls.enabled',
    class: 'restart',
  },
  {
    name: 'edge heartbeat',
    mutate: (r) => (r.edge.heartbeat_interval_ms = 1000),
    path: 'edge.heartbeat_interval_ms',
    class: 'restart',
  },
  {
    name: 'bootstrap listen',
    mutate: (r) => ((r.bootstrap as Record<string, unknown>).listen = '0.0.0.0:29091'),
    path: 'bootstrap.listen',
    class: 'restart',
  },
  {
    name: 'bootstrap artifact_dir',
    mutate: (r) => ((r.bootstrap as Record<string, unknown>).artifact_dir = '/x'),
    path: 'bootstrap.artifact_dir',
    class: 'restart',
  },
  {
    name: 'logging level',
    mutate: (r) => ((r.logging as Record<string, unknown>).level = 'debug'),
    path: 'logging.level',
    class: 'restart',
  },
  {
    name: 'metrics listen',
    mutate: (r) => ((r.metrics as Record<string, unknown>).listen = '127.0.0.1:29092'),
    path: 'metrics.listen',
    class: 'restart',
  },
  {
    name: 'console target',
    mutate: (r) => ((r.console as Record<string, unknown>).target = 'shot'),
    path: 'console.target',
    class: 'restart',
  },
  {
    name: 'refresh listen',
    mutate: (r) => ((r.refresh as Record<string, unknown>).listen = '127.0.0.1:29093'),
    path: 'refresh.listen',
    class: 'restart',
  },
  {
    name: 'openai listen',
    mutate: (r) => ((r.openai as Record<string, unknown>).listen = '127.0.0.1:28081'),
    path: 'openai.listen',
    class: 'restart',
  },
  {
    name: 'openai api_keys',
    mutate: (r) => ((r.openai as Record<string, unknown>).api_keys = ['k2']),
    path: 'openai.api_keys',
    class: 'live',
  },
  {
    // The stored-conversation store is opened with its bounds when the edge starts.
    name: 'openai responses store_ttl_days',
    mutate: (r) => ((r.openai as Record<string, unknown>).responses = { store_ttl_days: 7 }),
    path: 'openai.responses.store_ttl_days',
    class: 'restart',
  },
  {
    name: 'openai responses store_max_per_key',
    mutate: (r) => ((r.openai as Record<string, unknown>).responses = { store_max_per_key: 10 }),
    path: 'openai.responses.store_max_per_key',
    class: 'restart',
  },
  {
    name: 'a2a listen',
    mutate: (r) => ((r.a2a as Record<string, unknown>).listen = '127.0.0.1:28082'),
    path: 'a2a.listen',
    class: 'restart',
  },
  {
    name: 'a2a push allow_hosts',
    mutate: (r) => ((r.a2a as Record<string, unknown>).push = { allow_hosts: ['hooks.internal'] }),
    path: 'a2a.push.allow_hosts',
    class: 'restart',
  },
  {
    name: 'a2a push max_attempts',
    mutate: (r) => ((r.a2a as Record<string, unknown>).push = { max_attempts: 3 }),
    path: 'a2a.push.max_attempts',
    class: 'restart',
  },
  {
    name: 'node added with a token of its own',
    mutate: (r) => r.nodes.push({ id: 'n3', token: 't3' } as unknown as Raw['nodes'][number]),
    path: 'nodes[n3]',
    change: 'added',
    class: 'restart',
  },
  {
    name: 'node added with an alias of its own',
    mutate: (r) => r.nodes.push({ id: 'n3', alias: 'third' } as unknown as Raw['nodes'][number]),
    path: 'nodes[n3]',
    change: 'added',
    class: 'restart',
  },
  {
    name: 'node removed',
    mutate: (r) => r.nodes.splice(1, 1),
    path: 'nodes[n2]',
    change: 'removed',
    class: 'restart',
  },
  { name: 'node token', mutate: (r) => (node(r).token = 't2'), path: 'nodes[n1].token', class: 'restart' },
  {
    name: 'node token_sha256',
    mutate: (r) => ((node(r).token = ''), (node(r).token_sha256 = 'a'.repeat(64))),
    path: 'nodes[n1].token_sha256',
    class: 'restart',
  },
  {
    name: 'node alias',
    mutate: (r) => (node(r).alias = 'renamed'),
    path: 'nodes[n1].alias',
    class: 'restart',
  },
  {
    name: 'node agent kind',
    mutate: (r) => (node(r).agent_kind = 'other-agent'),
    path: 'nodes[n1].agent_kind',
    class: 'restart',
  },
  {
    name: 'adapter settings (cli max_sessions)',
    mutate: (r) => (node(r).adapters.cli.max_sessions = 2),
    path: 'nodes[n1].adapters.instances[cli].max_sessions',
    class: 'restart',
  },
  {
    name: 'adapter instance enabled',
    mutate: (r) => ((node(r).adapters.instances[0].enabled = false), (provider(r, 'p-vllm').enabled = false)),
    path: 'nodes[n1].adapters.instances[gpu].enabled',
    class: 'restart',
  },
  {
    name: 'adapter instance removed',
    mutate: (r) => {
      node(r).adapters.instances.splice(0, 1);
      node(r).providers.splice(2, 1);
      delete (r.models[0].providers as Record<string, string>)['p-vllm'];
    },
    path: 'nodes[n1].adapters.instances[gpu]',
    change: 'removed',
    class: 'restart',
  },
  {
    name: 'provider type',
    mutate: (r) => (provider(r, 'p-vllm').type = 'sglang'),
    path: 'nodes[n1].providers[p-vllm].type',
    class: 'restart',
  },
  {
    name: 'provider category',
    mutate: (r) => (provider(r, 'p-vllm').category = 'local_inference'),
    path: 'nodes[n1].providers[p-vllm].category',
    class: 'restart',
  },
  {
    name: 'provider adapter',
    mutate: (r) => (provider(r, 'p-vllm').adapter = 'openai_compat'),
    path: 'nodes[n1].providers[p-vllm].adapter',
    class: 'restart',
  },
  {
    name: 'provider models',
    mutate: (r) => (provider(r, 'p-vllm').models = ['served-1', 'served-2']),
    path: 'nodes[n1].providers[p-vllm].models',
    class: 'restart',
  },
  {
    name: 'provider lifecycle_capabilities',
    mutate: (r) => (provider(r, 'p-ollama').lifecycle_capabilities = ['list_models', 'pull_model']),
    path: 'nodes[n1].providers[p-ollama].lifecycle_capabilities',
    class: 'restart',
  },
  {
    name: 'provider health (the seed lists it as restart-required)',
    mutate: (r) => (provider(r, 'p-ollama').health = { interval_ms: 5000 }),
    path: 'nodes[n1].providers[p-ollama].health.interval_ms',
    class: 'restart',
  },
  {
    name: 'provider added with a new node',
    mutate: (r) =>
      r.nodes.push({
        id: 'n3',
        token_sha256: 'b'.repeat(64),
        providers: [{ id: 'p-n3', type: 'cli', category: 'cli', adapter: 'cli' }],
        adapters: { cli: { profiles: { fake: { command: 'fake' } } } },
      } as unknown as Raw['nodes'][number]),
    path: 'nodes[n3].providers[p-n3]',
    change: 'added',
    class: 'restart',
  },
  {
    name: 'provider removed',
    mutate: (r) => node(r).providers.splice(0, 1),
    path: 'nodes[n1].providers[p-cli]',
    change: 'removed',
    class: 'restart',
  },
  {
    name: 'execution field provider',
    mutate: (r) => (node(r).adapters.instances[0].provider = 'sglang'),
    path: 'nodes[n1].adapters.instances[gpu].provider',
    class: 'restart',
  },
  {
    name: 'execution field base_url (endpoint)',
    mutate: (r) => (node(r).adapters.instances[0].base_url = 'http://gpu2:8000/v1'),
    path: 'nodes[n1].adapters.instances[gpu].base_url',
    class: 'restart',
  },
  {
    name: 'execution field headers',
    mutate: (r) => (node(r).adapters.instances[0].headers = { 'X-K': 'w' }),
    path: 'nodes[n1].adapters.instances[gpu].headers.X-K',
    class: 'restart',
  },
  {
    name: 'execution field command',
    mutate: (r) => (profile(r).command = 'bin/other'),
    path: 'nodes[n1].adapters.instances[cli].profiles.fake.command',
    class: 'restart',
  },
  {
    name: 'execution field args',
    mutate: (r) => (profile(r).args = ['-b']),
    path: 'nodes[n1].adapters.instances[cli].profiles.fake.args',
    class: 'restart',
  },
  {
    name: 'execution field env',
    mutate: (r) => (profile(r).env = { A: '2' }),
    path: 'nodes[n1].adapters.instances[cli].profiles.fake.env.A',
    class: 'restart',
  },
  {
    name: 'execution field mode',
    mutate: (r) => (profile(r, 'shot').mode = 'antigravity-print'),
    path: 'nodes[n1].adapters.instances[cli].profiles.shot.mode',
    class: 'restart',
  },
  {
    name: 'execution field resume_args',
    mutate: (r) => (profile(r).resume_args = ['--continue']),
    path: 'nodes[n1].adapters.instances[cli].profiles.fake.resume_args',
    class: 'restart',
  },
  {
    name: 'execution field output_format',
    mutate: (r) => (profile(r, 'shot').output_format = 'codex-json'),
    path: 'nodes[n1].adapters.instances[cli].profiles.shot.output_format',
    class: 'restart',
  },
  {
    name: 'execution field context_size',
    mutate: (r) => (node(r).adapters.ollama.context_size = 4096),
    path: 'nodes[n1].adapters.instances[ollama].context_size',
    class: 'restart',
  },
  {
    name: 'execution field request_timeout_ms (http)',
    mutate: (r) => (node(r).adapters.ollama.request_timeout_ms = 1000),
    path: 'nodes[n1].adapters.instances[ollama].request_timeout_ms',
    class: 'restart',
  },
  {
    name: 'execution field request_timeout_ms (cli)',
    mutate: (r) => (profile(r).request_timeout_ms = 1000),
    path: 'nodes[n1].adapters.instances[cli].profiles.fake.request_timeout_ms',
    class: 'restart',
  },
  {
    name: 'ops dashboard listener (ui)',
    mutate: (r) => (r.ui = { enabled: true, listen: '127.0.0.1:19094' }),
    path: 'ui.enabled',
    class: 'restart',
  },
];

describe('classifyRefresh', () => {
  const current = loadBase();

  it.each([...live, ...restart])('$name → $class', (entry) => {
    const result = classifyRefresh(current, candidate(entry.mutate), 'apply');
    expect(result.status).toBe(entry.class === 'live' ? 'applied' : 'restart_required');
    expect(result.reports).toContainEqual(
      expect.objectContaining({ path: entry.path, change: entry.change ?? 'modified', class: entry.class }),
    );
    expect(result.reports.every((report) => report.reason.length > 0)).toBe(true);
    if (entry.class === 'live') expect(result.reports.every((report) => report.class === 'live')).toBe(true);
  });

  it('names execution fields in the reason of a restart report', () => {
    const result = classifyRefresh(
      current,
      candidate((r) => (profile(r).command = 'bin/other')),
      'dry-run',
    );
    expect(result.reports[0]?.reason).toBe(
      "execution field 'command' of adapter instance 'cli' changed; adapters are rebuilt on restart",
    );
  });

  it('returns applied with empty arrays when nothing changed', () => {
    expect(
      classifyRefresh(
        current,
        candidate(() => undefined),
        'dry-run',
      ),
    ).toEqual({
      status: 'applied',
      mode: 'dry-run',
      changed_nodes: [],
      changed_providers: [],
      changed_models: [],
      reports: [],
    });
  });

  it('lists changed nodes, providers and models, and lets one restart change decide the status', () => {
    const result = classifyRefresh(
      current,
      candidate((r) => {
        provider(r, 'p-cli').capacity = 5;
        r.models[0].display_name = 'Renamed';
        node(r).adapters.ollama.base_url = 'http://127.0.0.1:11435';
        r.nodes[1].providers[0].priority = 3;
      }),
      'apply',
    );
    expect(result.status).toBe('restart_required');
    expect(result.changed_nodes).toEqual(['n1', 'n2']);
    expect(result.changed_providers).toEqual(['p-cli', 'p-n2']);
    expect(result.changed_models).toEqual(['m1']);
    expect(result.reports.map((report) => `${report.class} ${report.path}`)).toEqual([
      'live models[m1].display_name',
      'restart nodes[n1].adapters.instances[ollama].base_url',
      'live nodes[n1].providers[p-cli].capacity',
      'live nodes[n2].providers[p-n2].priority',
    ]);
  });

  it('applies a whole adopted backend live: a new instance, its provider and its model on a known node', () => {
    const result = classifyRefresh(
      current,
      candidate((r) => {
        node(r).adapters.instances.push({
          name: 'ollama-2',
          type: 'ollama',
          base_url: 'http://127.0.0.1:11500',
        });
        node(r).providers.push({
          id: 'n1-ollama-2',
          type: 'ollama',
          category: 'local_inference',
          adapter: 'ollama-2',
          models: ['qwen3:8b'],
          capacity: 1,
        });
        r.models.push({ id: 'qwen3:8b', providers: { 'n1-ollama-2': 'qwen3:8b' } });
      }),
      'apply',
    );
    expect(result.status).toBe('applied');
    expect(result.changed_nodes).toEqual(['n1']);
    expect(result.changed_providers).toEqual(['n1-ollama-2']);
    expect(result.changed_models).toEqual(['qwen3:8b']);
    expect(result.reports.every((report) => report.class === 'live')).toBe(true);
  });

  it('reports a provider moved between nodes as restart-required', () => {
    const result = classifyRefresh(
      current,
      candidate((r) => {
        const moved = r.nodes[1].providers.splice(0, 1)[0];
        node(r).providers.push(moved);
      }),
      'apply',
    );
    expect(result.status).toBe('restart_required');
    expect(result.reports).toContainEqual(
      expect.objectContaining({ path: 'nodes[n1].providers[p-n2].node', class: 'restart' }),
    );
    expect(result.changed_nodes).toEqual(['n1', 'n2']);
  });

  it('rejects a candidate that fails validation, listing its issues, with empty change arrays', () => {
    const result = classifyRefresh(
      current,
      candidate((r) => (provider(r, 'p-cli').priority = -1)),
      'apply',
    );
    expect(result).toEqual({
      status: 'rejected',
      mode: 'apply',
      changed_nodes: [],
      changed_providers: [],
      changed_models: [],
      reports: [
        {
          path: 'nodes[0].providers[0].priority',
          change: 'modified',
          class: 'invalid',
          reason: expect.stringContaining('must not be negative') as unknown as string,
        },
      ],
    });
  });

  it('rejects a candidate that is not even YAML', () => {
    const result = classifyRefresh(current, parseConfigText('nodes: [', 'x.yaml'), 'dry-run');
    expect(result.status).toBe('rejected');
    expect(result.reports[0]).toMatchObject({ class: 'invalid' });
  });

  it.each(['', 'Apply', 'force', 'dry_run'])('rejects the invalid mode %j', (mode) => {
    const result = classifyRefresh(
      current,
      candidate((r) => (provider(r, 'p-cli').capacity = 3)),
      mode,
    );
    expect(result.status).toBe('rejected');
    expect(result.mode).toBe(mode);
    expect(result.reports).toEqual([
      {
        path: 'mode',
        change: 'modified',
        class: 'invalid',
        reason: `invalid refresh mode '${mode}': expected dry-run or apply`,
      },
    ]);
    expect(result.changed_providers).toEqual([]);
  });
});
