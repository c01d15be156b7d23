// Decides what a config refresh may do: compare the running config with a candidate and classify every
// changed leaf as live-applicable, restart-required, or invalid. Pure: applying the result is the caller's job.
//
// Report paths select list items by identity, not position, because positions differ between the two files:
// `nodes[<id>].providers[<id>].capacity`, `nodes[<id>].adapters.instances[<name>].profiles.<p>.command`,
// `models[<id>].display_name`. A dry-run returns the same classification an apply would act on.
import { formatIssue } from './format-issue.js';
import {
  REFRESH_MODES,
  type ConfigLoadResult,
  type EdgeConfig,
  type NodeConfig,
  type ProviderConfig,
  type RefreshChange,
  type RefreshClass,
  type RefreshClassification,
  type RefreshReport,
} from './types.js';

/** Provider fields the pool swaps atomically without touching adapters or nodes. */
const LIVE_PROVIDER_FIELDS = new Set(['capacity', 'priority', 'max_queue', 'queue_timeout_ms', 'enabled']);
/** Node fields delivered in the node's config payload and applied without reconnecting. */
const LIVE_NODE_PATHS = new Set([
  'runtime.max_concurrency',
  'runtime.health_probe_interval_ms',
  'runtime.resident_poll_interval_ms',
  'discovery.openai_compat_urls',
  'discovery.local_ports',
]);
/** Paths inside startup sections that are applied live nonetheless (API keys: principals and limits). */
const LIVE_SECTION_PATHS = new Map([['openai.api_keys', 'API keys and their limits are applied live']]);
/** Top-level sections read once at startup (listeners, identity, logging). */
const STARTUP_SECTIONS = [
  'edge',
  'logging',
  'metrics',
  'refresh',
  'bootstrap',
  'console',
  'openai',
  'a2a',
  'ui',
  'http',
  'usage',
  'tracing',
  'cluster',
] as const;
/** Adapter settings that change how a run executes; named in reasons so operators see why a restart is needed. */
const EXECUTION_FIELDS = new Set([
  'provider',
  'base_url',
  'headers',
  'command',
  'args',
  'env',
  'mode',
  'resume_args',
  'output_format',
  'fabric_model',
  'context_size',
  'request_timeout_ms',
]);

interface Difference {
  readonly path: string;
  readonly change: RefreshChange;
  /** Dotted path relative to the compared object, for rule lookups. */
  readonly relative: string;
}

interface Collector {
  readonly reports: RefreshReport[];
  readonly nodes: Set<string>;
  readonly providers: Set<string>;
  readonly models: Set<string>;
}

export function classifyRefresh(
  current: EdgeConfig,
  candidate: ConfigLoadResult,
  mode: string,
): RefreshClassification {
  const invalid: RefreshReport[] = [];
  if (!(REFRESH_MODES as readonly string[]).includes(mode)) {
    invalid.push({
      path: 'mode',
      change: 'modified',
      class: 'invalid',
      reason: `invalid refresh mode '${mode}': expected ${REFRESH_MODES.join(' or ')}`,
    });
  }
  if (!candidate.ok) {
    for (const issue of candidate.issues) {
      invalid.push({ path: issue.path, change: 'modified', class: 'invalid', reason: formatIssue(issue) });
    }
  }
  if (invalid.length > 0 || !candidate.ok) {
    return {
      status: 'rejected',
      mode,
      changed_nodes: [],
      changed_providers: [],
      changed_models: [],
      reports: invalid,
    };
  }

  const next = candidate.config;
  const collector: Collector = { reports: [], nodes: new Set(), providers: new Set(), models: new Set() };
  for (const section of STARTUP_SECTIONS) {
    for (const difference of diff(current[section], next[section], section)) {
      const live = LIVE_SECTION_PATHS.get(difference.path);
      if (live) report(collector, difference, 'live', live);
      else report(collector, difference, 'restart', `${section} settings are read at startup`);
    }
  }
  // Routing (retry, circuit breaker, affinity table bounds) is read by the supervisor and the pool on every refresh.
  for (const difference of diff(current.routing, next.routing, 'routing')) {
    report(collector, difference, 'live', 'routing (retry, circuit breaker, affinity) is applied live');
  }
  classifyModels(current, next, collector);
  classifyNodes(current, next, collector);
  classifyProviders(current, next, collector);

  const restart = collector.reports.some((entry) => entry.class === 'restart');
  return {
    status: restart ? 'restart_required' : 'applied',
    mode,
    changed_nodes: [...collector.nodes].sort(),
    changed_providers: [...collector.providers].sort(),
    changed_models: [...collector.models].sort(),
    reports: collector.reports,
  };
}

function classifyModels(current: EdgeConfig, next: EdgeConfig, collector: Collector): void {
  const before = new Map(current.models.map((model) => [model.id, model]));
  const after = new Map(next.models.map((model) => [model.id, model]));
  for (const id of union(before.keys(), after.keys())) {
    const path = `models[${id}]`;
    const differences = diff(before.get(id), after.get(id), path);
    for (const difference of differences) {
      report(collector, difference, 'live', 'model catalog and generation policy are applied live');
    }
    if (differences.length > 0) collector.models.add(id);
  }
}

function classifyNodes(current: EdgeConfig, next: EdgeConfig, collector: Collector): void {
  const before = new Map(current.nodes.map((node) => [node.id, node]));
  const after = new Map(next.nodes.map((node) => [node.id, node]));
  for (const id of union(before.keys(), after.keys())) {
    const path = `nodes[${id}]`;
    const previous = before.get(id);
    const following = after.get(id);
    if (!previous && following && joinsLive(following)) {
      report(
        collector,
        { path, change: 'added', relative: '' },
        'live',
        'node added without a token or alias of its own: it authenticates from the node store, its payload is pushed live',
      );
      collector.nodes.add(id);
      continue;
    }
    if (!previous || !following) {
      const change: RefreshChange = previous ? 'removed' : 'added';
      report(
        collector,
        { path, change, relative: '' },
        'restart',
        `node ${change}: node links are set up at startup`,
      );
      collector.nodes.add(id);
      continue;
    }
    const { providers: _before, adapters: adaptersBefore, ...restBefore } = previous;
    const { providers: _after, adapters: adaptersAfter, ...restAfter } = following;
    for (const difference of diff(restBefore, restAfter, path)) {
      if (LIVE_NODE_PATHS.has(difference.relative)) {
        report(collector, difference, 'live', 'node runtime settings are sent to the node live');
      } else {
        report(collector, difference, 'restart', `node ${difference.relative} identifies the node link`);
      }
      collector.nodes.add(id);
    }
    if (
      classifyInstances(
        adaptersBefore.instances,
        adaptersAfter.instances,
        `${path}.adapters.instances`,
        collector,
      )
    ) {
      collector.nodes.add(id);
    }
  }
}

function classifyInstances(
  before: NodeConfig['adapters']['instances'],
  after: NodeConfig['adapters']['instances'],
  path: string,
  collector: Collector,
): boolean {
  const previous = new Map(before.map((instance) => [instance.name, instance]));
  const following = new Map(after.map((instance) => [instance.name, instance]));
  let changed = false;
  for (const name of union(previous.keys(), following.keys())) {
    if (!previous.has(name)) {
      // Additive: the node swaps in a registry with the new instance (all-or-nothing); nothing running changes.
      report(
        collector,
        { path: `${path}[${name}]`, change: 'added', relative: '' },
        'live',
        `adapter instance '${name}' added: the node adds it to its adapter registry live`,
      );
      changed = true;
      continue;
    }
    for (const difference of diff(previous.get(name), following.get(name), `${path}[${name}]`)) {
      const field = lastField(difference.relative);
      const reason = EXECUTION_FIELDS.has(field)
        ? `execution field '${field}' of adapter instance '${name}' changed; adapters are rebuilt on restart`
        : `adapter instance '${name}' settings changed; adapters are rebuilt on restart`;
      report(collector, difference, 'restart', reason);
      changed = true;
    }
  }
  return changed;
}

function classifyProviders(current: EdgeConfig, next: EdgeConfig, collector: Collector): void {
  const before = providersById(current);
  const after = providersById(next);
  for (const id of union(before.keys(), after.keys())) {
    const previous = before.get(id);
    const following = after.get(id);
    const path = `nodes[${(following ?? previous)?.node ?? ''}].providers[${id}]`;
    if (!previous && following && takesProvidersLive(current, next, following.node)) {
      report(
        collector,
        { path, change: 'added', relative: '' },
        'live',
        'provider added to a known node: the pool and the node take it live',
      );
      markProvider(collector, id, following.node);
      continue;
    }
    if (!previous || !following) {
      const change: RefreshChange = previous ? 'removed' : 'added';
      report(
        collector,
        { path, change, relative: '' },
        'restart',
        `provider ${change}: node adapters and providers are rebuilt on restart`,
      );
      markProvider(collector, id, (following ?? previous)?.node);
      continue;
    }
    if (previous.node !== following.node) {
      report(
        collector,
        { path: `${path}.node`, change: 'modified', relative: 'node' },
        'restart',
        `provider moved from node '${previous.node}' to '${following.node}'`,
      );
      markProvider(collector, id, previous.node);
      markProvider(collector, id, following.node);
    }
    const { adapter_instance: _resolvedBefore, ...fieldsBefore } = previous.provider;
    const { adapter_instance: _resolvedAfter, ...fieldsAfter } = following.provider;
    for (const difference of diff(fieldsBefore, fieldsAfter, path)) {
      const field = difference.relative.split(/[.[]/)[0] ?? '';
      if (LIVE_PROVIDER_FIELDS.has(field)) {
        report(collector, difference, 'live', `provider ${field} is applied to the pool live`);
      } else {
        report(collector, difference, 'restart', `provider ${field} changes how the provider executes`);
      }
      markProvider(collector, id, following.node);
    }
  }
}

/**
 * A node added with no token and no alias of its own authenticates from the node store (read at every
 * registration) under its id, so nothing set up at startup names it: adding it (e.g. `iop-edge node adopt` of a
 * node registered with `node register`) only changes the payload it is sent.
 */
function joinsLive(node: NodeConfig): boolean {
  return node.token === '' && node.token_sha256 === '' && node.alias === node.id;
}

/** Providers can be added live to a node that is already configured or that joins live itself. */
function takesProvidersLive(current: EdgeConfig, next: EdgeConfig, nodeId: string): boolean {
  if (current.nodes.some((node) => node.id === nodeId)) return true;
  const added = next.nodes.find((node) => node.id === nodeId);
  return added !== undefined && joinsLive(added);
}

function markProvider(collector: Collector, id: string, node: string | undefined): void {
  collector.providers.add(id);
  if (node !== undefined) collector.nodes.add(node);
}

function providersById(config: EdgeConfig): Map<string, { node: string; provider: ProviderConfig }> {
  const out = new Map<string, { node: string; provider: ProviderConfig }>();
  for (const node of config.nodes) {
    for (const provider of node.providers) out.set(provider.id, { node: node.id, provider });
  }
  return out;
}

function report(collector: Collector, difference: Difference, kind: RefreshClass, reason: string): void {
  collector.reports.push({ path: difference.path, change: difference.change, class: kind, reason });
}

/** Leaf differences between two plain-data values; lists compare as a whole. */
function diff(before: unknown, after: unknown, path: string, relative = ''): Difference[] {
  if (before === undefined && after === undefined) return [];
  if (before === undefined) return [{ path, change: 'added', relative }];
  if (after === undefined) return [{ path, change: 'removed', relative }];
  if (isPlainObject(before) && isPlainObject(after)) {
    const out: Difference[] = [];
    for (const key of union(Object.keys(before), Object.keys(after))) {
      out.push(
        ...diff(before[key], after[key], `${path}.${key}`, relative === '' ? key : `${relative}.${key}`),
      );
    }
    return out;
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ path, change: 'modified', relative }];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function union(first: Iterable<string>, second: Iterable<string>): string[] {
  return [...new Set([...first, ...second])];
}

function lastField(relative: string): string {
  const parts = relative.split('.');
  // Map-valued settings (env, headers, profiles.<name>) report their map key; the field is the map itself.
  for (let index = parts.length - 1; index >= 0; index -= 1) {
    const part = parts[index] ?? '';
    if (EXECUTION_FIELDS.has(part)) return part;
  }
  return parts[parts.length - 1] ?? '';
}
