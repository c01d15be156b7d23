// Principals: who a request runs as. An API key from `openai.api_keys` (id, model allow-list, limits) or the A2A
// `bearer_token` shortcut (an unlimited principal). Resolution compares SHA-256 digests with timingSafeEqual
// against every known key without an early exit, so timing reveals neither which key nor how much of one matched.
import { createHash, timingSafeEqual } from 'node:crypto';
import { DEFAULTS, type ApiKeyConfig, type KeyPriority, type TokenBudgetConfig } from '@iop/config';
import type { LimitLease } from './limit-lease.js';

export interface Principal {
  /** The key id (never the secret): usage records, metrics and logs name it. */
  readonly id: string;
  /** Model ids this principal may use; undefined = every model. */
  readonly models: ReadonlySet<string> | undefined;
  readonly rpm: number | null;
  readonly tpm: number | null;
  readonly maxConcurrent: number | null;
  readonly tokenBudget: TokenBudgetConfig | null;
  /** The key's share of a model's queue against other keys (fair share; 1..1000, default 1). */
  readonly weight: number;
  /** `batch`: waits while an interactive waiter of the same model can be served. */
  readonly priority: KeyPriority;
  /**
   * Cluster mode: this run's share of the key's limits, already taken on the key's home edge. The governor that
   * admits the run then counts nothing itself and hands the run's tokens to the lease when it ends.
   */
  readonly lease?: LimitLease;
}

/** Id of the principal the A2A `bearer_token` shortcut resolves to. */
export const A2A_BEARER_PRINCIPAL_ID = 'a2a-bearer-token';

export function principalOf(key: ApiKeyConfig): Principal {
  return {
    id: key.id,
    models: key.models.length > 0 ? new Set(key.models) : undefined,
    rpm: key.rpm,
    tpm: key.tpm,
    maxConcurrent: key.max_concurrent,
    tokenBudget: key.token_budget,
    weight: key.weight,
    priority: key.priority,
  };
}

/** An unlimited principal (a shared bearer token). */
export function unlimitedPrincipal(id: string): Principal {
  return {
    id,
    models: undefined,
    rpm: null,
    tpm: null,
    maxConcurrent: null,
    tokenBudget: null,
    weight: DEFAULTS.key_weight,
    priority: DEFAULTS.key_priority,
  };
}

/** True when the principal may use `model` (a model outside the allow-list is treated as unknown). */
export function allowsModel(principal: Principal, model: string): boolean {
  return principal.models === undefined || principal.models.has(model);
}

/** True when the principal has any limit (max_concurrent, rpm, tpm, token budget) to count. */
export function hasLimits(principal: Principal): boolean {
  return (
    principal.maxConcurrent !== null ||
    principal.rpm !== null ||
    principal.tpm !== null ||
    principal.tokenBudget !== null
  );
}

export type Authentication =
  /** No key is configured for this surface: requests run anonymously. */
  { kind: 'open' } | { kind: 'accepted'; principal: Principal } | { kind: 'missing' } | { kind: 'invalid' };

/** A principal looked up by its id (a run placed again after an edge restart: who it runs as now). */
export type PrincipalLookup =
  /** No key is configured: only anonymous runs exist. */
  { kind: 'open' } | { kind: 'found'; principal: Principal } | { kind: 'unknown' };

export interface PrincipalResolver {
  /** True when at least one key is configured (requests must authenticate). */
  readonly required: boolean;
  /** Resolves an `Authorization` header value. */
  authenticate(authorization: string | undefined): Authentication;
  /**
   * The principal with this id among the keys in force (the A2A bearer principal included where it is), so a
   * run recorded under a key id runs with that key's current limits and allow-list — or not at all when the key
   * is gone. Ids are not secrets: no constant-time comparison is needed.
   */
  byId(id: string): PrincipalLookup;
}

export interface PrincipalResolverOptions {
  keys: readonly ApiKeyConfig[];
  /** Extra secrets and the principal each stands for (the A2A bearer-token shortcut). */
  extra?: readonly { secret: string; principal: Principal }[];
}

export function createPrincipalResolver(options: PrincipalResolverOptions): PrincipalResolver {
  const entries = [
    ...options.keys.map((key) => ({
      digest: Buffer.from(key.key_sha256, 'hex'),
      principal: principalOf(key),
    })),
    ...(options.extra ?? [])
      .filter((extra) => extra.secret !== '')
      .map((extra) => ({ digest: sha256(extra.secret), principal: extra.principal })),
  ];
  const required = entries.length > 0;
  const byId = new Map<string, Principal>();
  // The first entry of an id wins, as in authenticate (ids are unique by validation).
  for (const entry of entries)
    if (!byId.has(entry.principal.id)) byId.set(entry.principal.id, entry.principal);
  return {
    required,
    byId(id) {
      if (!required) return { kind: 'open' };
      const principal = byId.get(id);
      return principal ? { kind: 'found', principal } : { kind: 'unknown' };
    },
    authenticate(authorization) {
      if (!required) return { kind: 'open' };
      const match = /^Bearer\s+(.+)$/i.exec((authorization ?? '').trim());
      const presented = sha256(match?.[1] ?? '');
      let found: Principal | undefined;
      for (const entry of entries) {
        // Every entry is compared; the first match wins (ids and digests are unique by validation).
        const equal = timingSafeEqual(presented, entry.digest);
        if (equal && found === undefined) found = entry.principal;
      }
      if (!match) return { kind: 'missing' };
      return found ? { kind: 'accepted', principal: found } : { kind: 'invalid' };
    },
  };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
