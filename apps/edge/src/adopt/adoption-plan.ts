// Turns what a node discovered into config entries (`iop-edge node adopt`): one adapter instance per model
// server, one CLI instance holding a shipped profile per coding-agent CLI, one provider per instance with a
// conservative capacity (its comment says why), and a models[] entry per served model. Pure: reads the current
// config, never changes it. Nothing existing is overwritten — a server or CLI the node already has is skipped,
// and a model id that already exists is reported as a clash and left alone.
import { IDENTIFIER_PATTERN, type EdgeConfig, type NodeEntries } from '@iop/config';
import type { DiscoveredBackend, NodeDiscovered } from '../present/node-discovered.js';
import { SHIPPED_CLI_PROFILES } from './cli-profiles.js';

/** Server kinds discovery reports, then the CLIs: what `--only` accepts. */
export const ADOPTABLE_KINDS: readonly string[] = [
  'ollama',
  'vllm',
  'llama.cpp',
  'lmstudio',
  'sglang',
  'openai_compat',
  ...Object.keys(SHIPPED_CLI_PROFILES),
];

export interface AdoptionPlan {
  readonly entries: NodeEntries;
  /** The node has no nodes[] entry yet; adopting adds `{ id }`. */
  readonly newNode: boolean;
  /** What was left out and why: clashes with existing models, servers or CLIs already configured. */
  readonly notes: readonly string[];
}

interface ServerDefaults {
  readonly capacity: number;
  readonly why: string;
}

/** Conservative starting points; the operator raises them after measuring. */
const SERVER_DEFAULTS: Readonly<Record<string, ServerDefaults>> = {
  ollama: {
    capacity: 1,
    why: 'one request at a time: Ollama shares one GPU between requests (raise with OLLAMA_NUM_PARALLEL)',
  },
  vllm: { capacity: 4, why: 'vLLM batches concurrent requests; 4 is a safe start for one GPU' },
  sglang: { capacity: 4, why: 'SGLang batches concurrent requests; 4 is a safe start for one GPU' },
  'llama.cpp': { capacity: 1, why: 'llama.cpp server runs one slot unless started with --parallel' },
  lmstudio: { capacity: 1, why: 'LM Studio serves one request at a time by default' },
  openai_compat: { capacity: 2, why: 'an unknown OpenAI-compatible server: two at a time until measured' },
};

const INSTANCE_NAMES: Readonly<Record<string, string>> = { openai_compat: 'openai-compat' };

export function planAdoption(
  config: EdgeConfig,
  nodeId: string,
  discovered: NodeDiscovered,
  only?: ReadonlySet<string>,
  /** A models[] id: each adopted CLI also gets its `<cli>-fabric` profile calling that model (issue 42). */
  fabricModel?: string,
): AdoptionPlan {
  const node = config.nodes.find((candidate) => candidate.id === nodeId);
  const instanceNames = new Set(node?.adapters.instances.map((instance) => instance.name) ?? []);
  const providerIds = new Set(
    config.nodes.flatMap((entry) => entry.providers.map((provider) => provider.id)),
  );
  const existingModels = new Set(config.models.map((model) => model.id));
  const instances: NodeEntries['instances'][number][] = [];
  const providers: NodeEntries['providers'][number][] = [];
  /** New model id → provider id → served name, in discovery order. */
  const models = new Map<string, Record<string, string>>();
  const notes: string[] = [];
  const wanted = (kind: string) => !only || only.has(kind);

  const addModels = (providerId: string, served: readonly string[]) => {
    for (const name of served) {
      if (existingModels.has(name)) {
        notes.push(
          `models[${name}] already exists: not changed (add "${providerId}: ${name}" to its providers to pool this copy)`,
        );
        continue;
      }
      models.set(name, { ...models.get(name), [providerId]: name });
    }
  };

  for (const backend of discovered.backends) {
    if (!wanted(backend.kind)) continue;
    const existing = node?.adapters.instances.find(
      (instance) => instance.type !== 'cli' && sameUrl(instance.base_url, backend.baseUrl),
    );
    if (existing) {
      notes.push(`${backend.kind} at ${backend.baseUrl} is already instance '${existing.name}': skipped`);
      continue;
    }
    const name = unique(INSTANCE_NAMES[backend.kind] ?? backend.kind, instanceNames);
    const isOllama = backend.kind === 'ollama';
    instances.push({
      value: isOllama
        ? { name, type: 'ollama', base_url: backend.baseUrl }
        : {
            name,
            type: 'openai_compat',
            provider: backend.kind === 'openai_compat' ? 'openai' : backend.kind,
            base_url: backend.baseUrl,
          },
      comment: `discovered ${describeServer(backend)}`,
    });
    const defaults = SERVER_DEFAULTS[backend.kind] ?? SERVER_DEFAULTS['openai_compat'];
    const providerId = unique(identifier(`${nodeId}-${name}`), providerIds);
    providers.push({
      value: {
        id: providerId,
        type: identifier(backend.kind),
        category: isLoopback(backend.baseUrl) ? 'local_inference' : 'api',
        adapter: name,
        models: [...backend.models],
        capacity: defaults.capacity,
        lifecycle_capabilities: isOllama
          ? ['list_models', 'load_model', 'unload_model', 'pull_model']
          : ['list_models'],
      },
      comment: `capacity ${defaults.capacity}: ${defaults.why}`,
    });
    addModels(providerId, backend.models);
  }

  const profiles: Record<string, Readonly<Record<string, unknown>>> = {};
  const found: string[] = [];
  for (const cli of discovered.clis) {
    const shipped = SHIPPED_CLI_PROFILES[cli.name];
    if (!shipped || !wanted(cli.name)) continue;
    const existing = node?.adapters.instances.find(
      (instance) =>
        instance.type === 'cli' &&
        instance.enabled &&
        Object.values(instance.profiles).some((profile) => profile.command === cli.name),
    );
    if (existing) {
      notes.push(`${cli.name} already has a profile in CLI instance '${existing.name}': skipped`);
      continue;
    }
    profiles[shipped.profile] = shipped.settings;
    if (fabricModel && shipped.fabric) {
      profiles[shipped.fabric.profile] = { ...shipped.fabric.settings, fabric_model: fabricModel };
    }
    found.push(`${cli.name}${cli.version ? ` ${cli.version}` : ''}`);
  }
  const profileNames = Object.keys(profiles);
  if (profileNames.length > 0) {
    const name = unique('agents', instanceNames);
    const { agentsSeparateUser, agentUser, agentWorkspaceRoot } = discovered.host;
    const separate = agentsSeparateUser && agentUser !== '' && agentWorkspaceRoot !== '';
    const isolation = separate
      ? `; run_as ${agentUser} and workspace_roots [${agentWorkspaceRoot}]: the node runs its agents as that user` +
        ` (it cannot read the node's token, identity key or history), and runs stay in its workspaces dir`
      : `; no run_as: agents run as the node's user (a prompt can read the node's token, identity key and history)`;
    instances.push({
      value: {
        name,
        type: 'cli',
        ...(separate ? { run_as: agentUser, workspace_roots: [agentWorkspaceRoot] } : {}),
        profiles,
      },
      comment: `discovered on PATH: ${found.join(', ')} (profiles as in the shipped configs/edge.yaml)${isolation}`,
    });
    const providerId = unique(identifier(`${nodeId}-${name}`), providerIds);
    providers.push({
      value: {
        id: providerId,
        type: 'cli',
        category: 'cli',
        adapter: name,
        models: profileNames,
        capacity: profileNames.length,
      },
      comment: `capacity ${profileNames.length}: one run per CLI at a time; each run is a whole agent process on ${separate ? `${agentUser}'s` : "the node user's"} account`,
    });
    addModels(providerId, profileNames);
  }

  return {
    entries: {
      nodeId,
      instances,
      providers,
      models: [...models].map(([id, modelProviders]) => ({
        value: { id, providers: modelProviders },
        comment: '',
      })),
    },
    newNode: node === undefined,
    notes,
  };
}

function describeServer(backend: DiscoveredBackend): string {
  const version = backend.version ? ` ${backend.version}` : '';
  const count = backend.models.length;
  return `${backend.kind}${version} at ${backend.baseUrl} (${count} model${count === 1 ? '' : 's'})`;
}

/** `base`, else `base-2`, `base-3`, ...; the chosen name is reserved in `taken`. */
function unique(base: string, taken: Set<string>): string {
  let name = base;
  for (let index = 2; taken.has(name); index += 1) name = identifier(`${base}-${index}`, `-${index}`);
  taken.add(name);
  return name;
}

/** A valid identifier (≤ 64 characters), keeping `suffix` when the text has to be shortened. */
function identifier(text: string, suffix = ''): string {
  const cleaned = text.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  const fitted = cleaned.length <= 64 ? cleaned : `${cleaned.slice(0, 64 - suffix.length)}${suffix}`;
  if (!new RegExp(IDENTIFIER_PATTERN).test(fitted)) throw new Error(`cannot make an identifier of '${text}'`);
  return fitted;
}

function sameUrl(left: string, right: string): boolean {
  const normalize = (url: string) => url.replace(/\/+$/, '').toLowerCase();
  return normalize(left) === normalize(right);
}

function isLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
  } catch {
    return false;
  }
}
