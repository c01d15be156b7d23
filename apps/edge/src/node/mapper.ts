// Config → NodeConfigPayload: what the edge tells a node about itself when it registers (and on a live refresh).
// The payload carries a stable `revision` (content hash of everything else, keys sorted) so the node and the
// edge can tell whether a refresh changed anything; equal configs always give equal revisions.
import { createHash } from 'node:crypto';
import {
  DEFAULT_DISCOVERY_LOCAL_PORTS,
  type AdapterInstanceConfig,
  type CliProfileConfig,
  type NodeConfig,
  type ProviderConfig as ConfigProvider,
} from '@iop/config';
import type { AdapterInstance, CliProfile, NodeConfigPayload, ProviderConfig } from '@iop/wire';

/** Used for a node known only to the node store (registered by `iop-edge node register`, absent from config). */
export const DEFAULT_PAYLOAD_SETTINGS = {
  maxConcurrency: 4,
  healthProbeIntervalMs: 30_000,
  residentPollIntervalMs: 5_000,
} as const;

export function mapNodeConfig(node: NodeConfig): NodeConfigPayload {
  return withRevision({
    nodeId: node.id,
    alias: node.alias || node.id,
    maxConcurrency: node.runtime.max_concurrency,
    adapters: node.adapters.instances.map(mapAdapterInstance),
    providers: node.providers.map(mapProvider),
    revision: '',
    healthProbeIntervalMs: node.runtime.health_probe_interval_ms,
    residentPollIntervalMs: node.runtime.resident_poll_interval_ms,
    discovery: {
      openaiCompatUrls: [...node.discovery.openai_compat_urls],
      localPorts: [...node.discovery.local_ports],
    },
  });
}

/** The payload of a node with no config entry: no adapters, no providers, default limits. */
export function defaultNodePayload(nodeId: string): NodeConfigPayload {
  return withRevision({
    nodeId,
    alias: nodeId,
    maxConcurrency: DEFAULT_PAYLOAD_SETTINGS.maxConcurrency,
    adapters: [],
    providers: [],
    revision: '',
    healthProbeIntervalMs: DEFAULT_PAYLOAD_SETTINGS.healthProbeIntervalMs,
    residentPollIntervalMs: DEFAULT_PAYLOAD_SETTINGS.residentPollIntervalMs,
    discovery: { openaiCompatUrls: [], localPorts: [...DEFAULT_DISCOVERY_LOCAL_PORTS] },
  });
}

/** The payload for `nodeId` given the configured nodes: mapped when configured, default otherwise. */
export function payloadForNode(nodes: readonly NodeConfig[], nodeId: string): NodeConfigPayload {
  const node = nodes.find((candidate) => candidate.id === nodeId);
  return node ? mapNodeConfig(node) : defaultNodePayload(nodeId);
}

export function mapAdapterInstance(instance: AdapterInstanceConfig): AdapterInstance {
  switch (instance.type) {
    case 'cli':
      return {
        name: instance.name,
        type: instance.type,
        enabled: instance.enabled,
        cli: {
          profiles: Object.fromEntries(
            Object.entries(instance.profiles).map(([name, profile]) => [name, mapCliProfile(profile)]),
          ),
          maxSessions: instance.max_sessions,
          sessionIdleTtlMs: instance.session_idle_ttl_ms,
          workspaceRoots: [...instance.workspace_roots],
          runAs: instance.run_as,
        },
      };
    case 'ollama':
      return {
        name: instance.name,
        type: instance.type,
        enabled: instance.enabled,
        http: {
          provider: 'ollama',
          baseUrl: instance.base_url,
          headers: {},
          requestTimeoutMs: instance.request_timeout_ms,
          contextSize: instance.context_size,
        },
      };
    case 'openai_compat':
      return {
        name: instance.name,
        type: instance.type,
        enabled: instance.enabled,
        http: {
          provider: instance.provider,
          baseUrl: instance.base_url,
          headers: { ...instance.headers },
          requestTimeoutMs: instance.request_timeout_ms,
          contextSize: 0,
        },
      };
    default: {
      const unreachable: never = instance;
      throw new Error(`unknown adapter instance type ${JSON.stringify(unreachable)}`);
    }
  }
}

function mapCliProfile(profile: CliProfileConfig): CliProfile {
  return {
    command: profile.command,
    args: [...profile.args],
    env: { ...profile.env },
    mode: profile.mode,
    persistent: profile.persistent,
    terminal: profile.terminal,
    resumeArgs: [...profile.resume_args],
    outputFormat: profile.output_format,
    idleTimeoutMs: profile.idle_timeout_ms,
    requestTimeoutMs: profile.request_timeout_ms,
    resultGraceMs: profile.result_grace_ms,
  };
}

function mapProvider(provider: ConfigProvider): ProviderConfig {
  return {
    id: provider.id,
    type: provider.type,
    category: provider.category,
    // The node routes by instance name; the config may have named a bare type that resolved to one instance.
    adapter: provider.adapter_instance ?? provider.adapter,
    models: [...provider.models],
    capacity: provider.capacity,
    enabled: provider.enabled,
    lifecycleCapabilities: [...provider.lifecycle_capabilities],
    // Absent (the node's interval) unless the provider sets its own; a payload without it hashes as before.
    healthProbeIntervalMs: provider.health.enabled ? (provider.health.interval_ms ?? undefined) : 0,
  };
}

function withRevision(payload: NodeConfigPayload): NodeConfigPayload {
  const { revision: _ignored, ...content } = payload;
  const digest = createHash('sha256').update(canonicalJson(content)).digest('hex');
  return { ...payload, revision: digest.slice(0, 16) };
}

/** JSON with object keys sorted at every level, so equal content hashes equally whatever the insertion order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
