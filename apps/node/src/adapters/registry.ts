// The node's adapter instances, built from the `adapters` of the config payload the edge pushes. `apply` swaps
// in a new set atomically: instances whose settings did not change are kept as they are (their sessions and
// in-flight runs continue), changed or removed ones are retired and closed once their last hold is released.
//
// Runs and commands take an AdapterHold on the adapter they use (`acquire` → `release()`, exactly once), which is what
// lets a refresh retire an instance without cutting a run short.
import { typedError } from '@iop/errors';
import type { AdapterInstance } from '@iop/wire';
import type { Logger } from '@iop/logging';
import type { Adapter, AdapterDeps, AdapterFactory, AdapterType } from './adapter.js';

export const ADAPTER_TYPES: readonly AdapterType[] = ['cli', 'ollama', 'openai_compat'];

export type RegistryErrorCode =
  'adapter_not_found' | 'adapter_ambiguous' | 'adapter_disabled' | 'invalid_config';

export class RegistryError extends typedError<RegistryErrorCode>('RegistryError') {}

export interface AdapterRegistryDeps {
  /** Factories this build can run; the keys are what the node reports as its supported adapters. */
  factories: Partial<Record<AdapterType, AdapterFactory>>;
  adapterDeps: AdapterDeps;
  logger: Logger;
}

/** A run's or command's hold on one adapter instance: a refresh never closes an instance that is held. */
export interface AdapterHold {
  readonly adapter: Adapter;
  /** Idempotent. The last release of a retired instance closes it. */
  release(): void;
}

export interface RegistryChange {
  added: string[];
  kept: string[];
  replaced: string[];
  removed: string[];
}

interface Entry {
  adapter: Adapter;
  fingerprint: string;
  holds: number;
  retired: boolean;
  closing: Promise<void> | undefined;
}

export class AdapterRegistry {
  private readonly deps: AdapterRegistryDeps;
  private active = new Map<string, Entry>();
  /** Names of instances present in the config but disabled (so resolve can say so). */
  private disabled = new Set<string>();
  private readonly retiring = new Set<Entry>();
  private closed = false;

  constructor(deps: AdapterRegistryDeps) {
    this.deps = deps;
  }

  /** Adapter types this build can run (reported at registration). */
  supportedTypes(): AdapterType[] {
    return ADAPTER_TYPES.filter((type) => this.deps.factories[type] !== undefined);
  }

  /**
   * Replaces the instance set. Validates and builds everything new first; on any failure nothing changes and a
   * RegistryError `invalid_config` names every problem.
   */
  apply(instances: readonly AdapterInstance[]): RegistryChange {
    if (this.closed) throw new RegistryError('invalid_config', 'adapter registry is closed');
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const instance of instances) {
      if (!instance.name) problems.push('an adapter instance has an empty name');
      else if (seen.has(instance.name)) problems.push(`adapter instance '${instance.name}' appears twice`);
      seen.add(instance.name);
      if (instance.enabled && !this.factoryFor(instance.type)) {
        problems.push(
          `adapter '${instance.name}' has type '${instance.type}', which this node does not support (supported: ${this.supportedTypes().join(', ')})`,
        );
      }
    }
    if (problems.length > 0) throw new RegistryError('invalid_config', problems.join('; '));

    const change: RegistryChange = { added: [], kept: [], replaced: [], removed: [] };
    const next = new Map<string, Entry>();
    const built: Entry[] = [];
    try {
      for (const instance of instances) {
        if (!instance.enabled) continue;
        const fingerprint = stableJson(instance);
        const current = this.active.get(instance.name);
        if (current && current.fingerprint === fingerprint) {
          next.set(instance.name, current);
          change.kept.push(instance.name);
          continue;
        }
        const factory = this.factoryFor(instance.type)!;
        const adapter = factory(instance, this.deps.adapterDeps);
        const entry: Entry = { adapter, fingerprint, holds: 0, retired: false, closing: undefined };
        built.push(entry);
        next.set(instance.name, entry);
        (current ? change.replaced : change.added).push(instance.name);
      }
    } catch (error) {
      for (const entry of built) void this.closeEntry(entry);
      throw new RegistryError(
        'invalid_config',
        `cannot build adapters: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    for (const [name, entry] of this.active) {
      if (next.get(name) === entry) continue;
      if (!next.has(name)) change.removed.push(name);
      this.retire(entry);
    }
    this.active = next;
    this.disabled = new Set(
      instances.filter((instance) => !instance.enabled).map((instance) => instance.name),
    );
    this.deps.logger.info({ ...change }, 'adapter registry applied');
    return change;
  }

  /**
   * The adapter for a run or command: the instance with exactly this name, or, when no instance has the name,
   * the single enabled instance of the type with that name.
   */
  resolve(name: string): Adapter {
    const exact = this.active.get(name);
    if (exact) return exact.adapter;
    return this.entryByType(name).adapter;
  }

  /** Resolves and takes a hold; the adapter will not be closed by a refresh before `release()`. */
  acquire(name: string): AdapterHold {
    const entry = this.active.get(name) ?? this.entryByType(name);
    entry.holds += 1;
    let released = false;
    return {
      adapter: entry.adapter,
      release: () => {
        if (released) return;
        released = true;
        entry.holds -= 1;
        if (entry.retired && entry.holds === 0) void this.closeEntry(entry);
      },
    };
  }

  /** Enabled instances, in config order. */
  list(): Adapter[] {
    return [...this.active.values()].map((entry) => entry.adapter);
  }

  /** Instances retired by a refresh and still serving runs (tests and status). */
  retiringCount(): number {
    return this.retiring.size;
  }

  /** Closes every instance now (shutdown: runs were already aborted). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.active.values(), ...this.retiring];
    this.active = new Map();
    await Promise.all(entries.map((entry) => this.closeEntry(entry)));
  }

  private entryByType(name: string): Entry {
    const ofType = [...this.active.values()].filter((entry) => entry.adapter.type === name);
    if (ofType.length === 1) return ofType[0];
    if (ofType.length > 1) {
      throw new RegistryError(
        'adapter_ambiguous',
        `adapter type '${name}' has ${ofType.length} enabled instances (${ofType.map((entry) => entry.adapter.name).join(', ')}); name one`,
      );
    }
    if (this.disabled.has(name))
      throw new RegistryError('adapter_disabled', `adapter '${name}' is disabled on this node`);
    const known = [...this.active.keys()];
    throw new RegistryError(
      'adapter_not_found',
      `unknown adapter '${name}' (enabled: ${known.length > 0 ? known.join(', ') : 'none'})`,
    );
  }

  private factoryFor(type: string): AdapterFactory | undefined {
    return (ADAPTER_TYPES as readonly string[]).includes(type)
      ? this.deps.factories[type as AdapterType]
      : undefined;
  }

  private retire(entry: Entry): void {
    entry.retired = true;
    if (entry.holds === 0) void this.closeEntry(entry);
    else this.retiring.add(entry);
  }

  private closeEntry(entry: Entry): Promise<void> {
    entry.closing ??= entry.adapter
      .close()
      .catch((error: unknown) => {
        this.deps.logger.warn(
          { adapter: entry.adapter.name, error: error instanceof Error ? error.message : String(error) },
          'adapter close failed',
        );
      })
      .finally(() => this.retiring.delete(entry));
    return entry.closing;
  }
}

/** JSON with object keys sorted, so equal settings compare equal whatever the key order of the payload. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${stableJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
