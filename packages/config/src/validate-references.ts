// Semantic checks JSON schema cannot express: uniqueness across the document, references between sections
// (provider → adapter instance, model → provider), cross-field rules and listener conflicts. Runs on the
// normalized config so legacy adapter forms are checked exactly like named instances.
import { createHash } from 'node:crypto';
import { formatPath, type PathSegment, type PendingIssue } from './config-path.js';
import type { NormalizedDocument } from './normalize.js';
import { checkExposure } from './check-exposure.js';
import { resolveAdapterReference } from './resolve-adapter.js';
import type { EdgeConfig } from './types.js';

export function validateReferences(document: NormalizedDocument): PendingIssue[] {
  const issues: PendingIssue[] = [];
  const { config } = document;
  checkEdge(config, issues);
  checkListeners(config, issues);
  checkNodes(document, issues);
  checkModels(config, issues);
  checkFabricModels(document, issues);
  checkRoutes(config, issues);
  checkRouteTargets(config, issues);
  checkApiKeys(config, issues);
  checkExposure(config, issues);
  return issues;
}

/** Modes whose process lives for one run: the only ones that can hold a run's model-endpoint secret. */
const FABRIC_MODEL_MODES: ReadonlySet<string> = new Set(['oneshot', 'antigravity-print']);

/**
 * `fabric_model` (issue 42): an agent's model calls become child runs of its run on the pool's model. It must
 * name a models[] id every enabled provider of which is served by a non-CLI adapter: a child waiting for agent
 * capacity could wait on its own parent. Only one-shot modes: a persistent process outlives the run whose secret
 * and endpoint it was started with.
 */
function checkFabricModels(document: NormalizedDocument, issues: PendingIssue[]): void {
  const { config, instanceSources } = document;
  const models = new Map(config.models.map((model) => [model.id, model]));
  // provider id → the adapter type serving it (enabled providers whose reference resolves).
  const providerTypes = new Map<string, string>();
  for (const node of config.nodes) {
    for (const provider of node.providers) {
      if (!provider.enabled) continue;
      const resolution = resolveAdapterReference(node.adapters.instances, provider.adapter);
      providerTypes.set(provider.id, resolution.ok ? resolution.instance.type : provider.category);
    }
  }
  config.nodes.forEach((node, nodeIndex) => {
    const sources = instanceSources[nodeIndex] ?? [];
    node.adapters.instances.forEach((instance, instanceIndex) => {
      if (instance.type !== 'cli') return;
      const source = sources[instanceIndex] ?? ['nodes', nodeIndex, 'adapters'];
      for (const [profileName, profile] of Object.entries(instance.profiles)) {
        if (profile.fabric_model === '') continue;
        const segments: PathSegment[] = [...source, 'profiles', profileName, 'fabric_model'];
        const inherited =
          profile.fabric_model === instance.fabric_model
            ? ` (from ${formatPath([...source, 'fabric_model'])})`
            : '';
        const model = models.get(profile.fabric_model);
        if (!model) {
          issues.push({
            segments,
            code: 'reference',
            message: `fabric_model '${profile.fabric_model}'${inherited} is not a models[] id`,
          });
          continue;
        }
        const cliProviders = Object.keys(model.providers).filter(
          (providerId) => providerTypes.get(providerId) === 'cli',
        );
        if (cliProviders.length > 0) {
          issues.push({
            segments,
            code: 'conflict',
            message: `fabric_model '${profile.fabric_model}'${inherited} is served by CLI providers (${cliProviders.join(', ')}); an agent's model calls must go to inference providers (ollama, openai_compat), never wait on agent capacity`,
          });
        }
        if (!FABRIC_MODEL_MODES.has(profile.mode)) {
          issues.push({
            segments,
            code: 'conflict',
            message: `fabric_model${inherited} needs a one-shot mode (oneshot, antigravity-print): mode '${profile.mode}' keeps a process past the run whose model endpoint it would use`,
          });
        }
      }
    });
  });
}

/** Key ids name principals in usage records and metrics; two entries with one id or one secret are ambiguous. */
function checkApiKeys(config: EdgeConfig, issues: PendingIssue[]): void {
  const ids = new Map<string, number>();
  const digests = new Map<string, number>();
  config.openai.api_keys.forEach((key, index) => {
    const firstId = ids.get(key.id);
    if (key.id !== '' && firstId !== undefined) {
      issues.push({
        segments: ['openai', 'api_keys', index],
        code: 'duplicate',
        message: `duplicate key id '${key.id}' (also openai.api_keys[${firstId}])`,
      });
    } else ids.set(key.id, index);
    const firstDigest = digests.get(key.key_sha256);
    if (key.key_sha256 !== '' && firstDigest !== undefined) {
      issues.push({
        segments: ['openai', 'api_keys', index],
        code: 'duplicate',
        message: `the same secret as openai.api_keys[${firstDigest}]`,
      });
    } else digests.set(key.key_sha256, index);
  });
}

function checkEdge(config: EdgeConfig, issues: PendingIssue[]): void {
  const { edge } = config;
  checkCluster(config, issues);
  if (edge.heartbeat_timeout_ms <= edge.heartbeat_interval_ms) {
    issues.push({
      segments: ['edge', 'heartbeat_timeout_ms'],
      code: 'conflict',
      message: `must be greater than edge.heartbeat_interval_ms (${edge.heartbeat_interval_ms})`,
    });
  }
  if (edge.tls.enabled) {
    for (const key of ['cert_file', 'key_file'] as const) {
      if (edge.tls[key] === '') {
        issues.push({
          segments: ['edge', 'tls', key],
          code: 'required',
          message: 'is required when tls.enabled is true',
        });
      }
    }
  }
}

/** Two enabled listeners on the same port clash when either binds every interface or both bind one host. */
function checkListeners(config: EdgeConfig, issues: PendingIssue[]): void {
  const listeners: { segments: PathSegment[]; address: string }[] = [
    { segments: ['edge', 'listen'], address: config.edge.listen },
    { segments: ['bootstrap', 'listen'], address: config.bootstrap.listen },
  ];
  if (config.metrics.enabled)
    listeners.push({ segments: ['metrics', 'listen'], address: config.metrics.listen });
  if (config.refresh.enabled)
    listeners.push({ segments: ['refresh', 'listen'], address: config.refresh.listen });
  if (config.openai.enabled)
    listeners.push({ segments: ['openai', 'listen'], address: config.openai.listen });
  if (config.a2a.enabled) listeners.push({ segments: ['a2a', 'listen'], address: config.a2a.listen });
  if (config.ui.enabled) listeners.push({ segments: ['ui', 'listen'], address: config.ui.listen });
  const parsed = listeners.map((listener) => ({ ...listener, ...splitAddress(listener.address) }));
  for (let later = 0; later < parsed.length; later += 1) {
    const current = parsed[later];
    if (!current || current.port === undefined || current.port === 0) continue;
    const clash = parsed
      .slice(0, later)
      .find(
        (earlier) =>
          earlier.port === current.port &&
          (isWildcard(earlier.host) || isWildcard(current.host) || earlier.host === current.host),
      );
    if (clash) {
      issues.push({
        segments: current.segments,
        code: 'conflict',
        message: `port ${current.port} is already used by ${clash.segments.join('.')} (${clash.address})`,
      });
    }
  }
}

function splitAddress(address: string): { host: string; port: number | undefined } {
  const index = address.lastIndexOf(':');
  if (index < 0) return { host: address, port: undefined };
  const port = Number(address.slice(index + 1));
  return { host: address.slice(0, index).toLowerCase(), port: Number.isInteger(port) ? port : undefined };
}

function isWildcard(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '[::]';
}

function checkNodes(document: NormalizedDocument, issues: PendingIssue[]): void {
  const { config, instanceSources } = document;
  const nodeNames = new Map<string, string>();
  const providerOwners = new Map<string, string>();
  config.nodes.forEach((node, nodeIndex) => {
    const nodePath: PathSegment[] = ['nodes', nodeIndex];
    const names =
      node.alias === node.id
        ? [['id', node.id]]
        : [
            ['id', node.id],
            ['alias', node.alias],
          ];
    for (const [key, name] of names as [string, string][]) {
      if (name === '') continue;
      const owner = nodeNames.get(name);
      if (owner) {
        issues.push({
          segments: [...nodePath, key],
          code: 'duplicate',
          message: `'${name}' is already used by ${owner}`,
        });
      } else {
        nodeNames.set(name, `nodes[${nodeIndex}].${key}`);
      }
    }
    if (node.token !== '' && node.token_sha256 !== '') {
      const digest = createHash('sha256').update(node.token, 'utf8').digest('hex');
      if (digest !== node.token_sha256) {
        issues.push({
          segments: [...nodePath, 'token_sha256'],
          code: 'conflict',
          message: 'does not match the SHA-256 of token; set only one of token and token_sha256',
        });
      }
    }

    const sources = instanceSources[nodeIndex] ?? [];
    const instanceOwners = new Map<string, PathSegment[]>();
    node.adapters.instances.forEach((instance, instanceIndex) => {
      const source = sources[instanceIndex] ?? [...nodePath, 'adapters'];
      const owner = instanceOwners.get(instance.name);
      if (owner) {
        issues.push({
          segments: source[source.length - 2] === 'instances' ? [...source, 'name'] : source,
          code: 'duplicate',
          message: `adapter instance name '${instance.name}' is already used by ${formatPath(owner)}`,
          key: source[source.length - 2] !== 'instances',
        });
      } else {
        instanceOwners.set(instance.name, source);
      }
      if (instance.type === 'cli') {
        for (const [profileName, profile] of Object.entries(instance.profiles)) {
          if (profile.mode === 'persistent-lazy' && !profile.terminal) {
            issues.push({
              segments: [...source, 'profiles', profileName, 'terminal'],
              code: 'conflict',
              message: "must be true for mode 'persistent-lazy' (it runs under a terminal)",
            });
          }
        }
      }
    });

    node.providers.forEach((provider, providerIndex) => {
      const providerPath: PathSegment[] = [...nodePath, 'providers', providerIndex];
      if (provider.id !== '') {
        const owner = providerOwners.get(provider.id);
        if (owner) {
          issues.push({
            segments: [...providerPath, 'id'],
            code: 'duplicate',
            message: `provider id '${provider.id}' is already used by ${owner}; provider ids are unique across all nodes`,
          });
        } else {
          providerOwners.set(provider.id, formatPath(providerPath));
        }
      }
      // A disabled provider keeps its structural checks but not the reference check (contract rule).
      if (!provider.enabled || provider.adapter === '') return;
      const resolution = resolveAdapterReference(node.adapters.instances, provider.adapter);
      if (!resolution.ok) {
        issues.push({
          segments: [...providerPath, 'adapter'],
          code: 'reference',
          message: resolution.reason,
        });
      } else if (provider.category === 'cli' && resolution.instance.type !== 'cli') {
        issues.push({
          segments: [...providerPath, 'adapter'],
          code: 'reference',
          message: `category cli needs an enabled cli adapter instance; '${resolution.instance.name}' is ${resolution.instance.type}`,
        });
      }
    });
  });
}

function checkModels(config: EdgeConfig, issues: PendingIssue[]): void {
  const providerIds = new Set(config.nodes.flatMap((node) => node.providers.map((provider) => provider.id)));
  const modelOwners = new Map<string, number>();
  config.models.forEach((model, index) => {
    const modelPath: PathSegment[] = ['models', index];
    const owner = modelOwners.get(model.id);
    if (owner !== undefined) {
      issues.push({
        segments: [...modelPath, 'id'],
        code: 'duplicate',
        message: `model id '${model.id}' is already used by models[${owner}]`,
      });
    } else if (model.id !== '') {
      modelOwners.set(model.id, index);
    }
    for (const providerId of Object.keys(model.providers)) {
      if (!providerIds.has(providerId)) {
        issues.push({
          segments: [...modelPath, 'providers', providerId],
          code: 'reference',
          message: `no provider with id '${providerId}' in nodes[].providers[]`,
          key: true,
        });
      }
    }
    if (
      model.min_max_tokens !== null &&
      model.default_max_tokens !== null &&
      model.min_max_tokens > model.default_max_tokens
    ) {
      issues.push({
        segments: [...modelPath, 'min_max_tokens'],
        code: 'conflict',
        message: `must not exceed default_max_tokens (${model.default_max_tokens})`,
      });
    }
  });
}

/**
 * Routes that could only fail at request time are config errors: a fallback `openai.models` list needs
 * `openai.adapter`, and a route's adapter must resolve (the provider rule: instance name, or a type with exactly one
 * enabled instance) on the route's node, or on at least one node when the route names none.
 */
function checkRouteTargets(config: EdgeConfig, issues: PendingIssue[]): void {
  if (config.openai.models.length > 0 && config.openai.adapter === '') {
    config.openai.models.forEach((_model, index) => {
      issues.push({
        segments: ['openai', 'models', index],
        code: 'reference',
        message:
          'openai.models lists models of the fallback route, but openai.adapter is empty (set it or move the model to models[] or model_routes)',
      });
    });
  }
  config.openai.model_routes.forEach((route, index) => {
    if (route.adapter === '') return;
    const nodes = route.node
      ? config.nodes.filter((node) => node.id === route.node || node.alias === route.node)
      : config.nodes;
    if (route.node && nodes.length === 0) {
      issues.push({
        segments: ['openai', 'model_routes', index, 'node'],
        code: 'reference',
        message: `no node '${route.node}' in nodes[] (by id or alias)`,
      });
      return;
    }
    const resolved = nodes.some((node) => resolveAdapterReference(node.adapters.instances, route.adapter).ok);
    if (resolved) return;
    const where = route.node ? `node '${route.node}'` : 'any node';
    const known = [
      ...new Set(
        nodes.flatMap((node) =>
          node.adapters.instances.filter((instance) => instance.enabled).map((instance) => instance.name),
        ),
      ),
    ];
    issues.push({
      segments: ['openai', 'model_routes', index, 'adapter'],
      code: 'reference',
      message: `adapter '${route.adapter}' names no enabled adapter instance on ${where} (enabled: ${known.length > 0 ? known.join(', ') : 'none'})`,
    });
  });
}

function checkRoutes(config: EdgeConfig, issues: PendingIssue[]): void {
  const seen = new Map<string, number>();
  config.openai.model_routes.forEach((route, index) => {
    const owner = seen.get(route.model);
    if (owner !== undefined) {
      issues.push({
        segments: ['openai', 'model_routes', index, 'model'],
        code: 'duplicate',
        message: `model '${route.model}' is already routed by openai.model_routes[${owner}]`,
      });
    } else if (route.model !== '') {
      seen.set(route.model, index);
    }
  });
}

/** cluster.enabled needs NATS servers and a fabric key, and state must outlive several heartbeats. */
function checkCluster(config: EdgeConfig, issues: PendingIssue[]): void {
  const { cluster } = config;
  if (!cluster.enabled) return;
  if (cluster.fabric_key_file === '') {
    issues.push({
      segments: ['cluster', 'fabric_key_file'],
      code: 'required',
      message:
        'is required when cluster.enabled is true: every edge of a fabric holds the same key file ' +
        "(create one with 'iop-edge cluster keygen --out FILE' and copy it to each edge)",
    });
  }
  if (cluster.nats.servers.length === 0) {
    issues.push({
      segments: ['cluster', 'nats', 'servers'],
      code: 'required',
      message: 'is required when cluster.enabled is true',
    });
  }
  if (cluster.state_ttl_ms < 2 * cluster.heartbeat_ms) {
    issues.push({
      segments: ['cluster', 'state_ttl_ms'],
      code: 'conflict',
      message: `must be at least twice cluster.heartbeat_ms (${cluster.heartbeat_ms})`,
    });
  }
}
