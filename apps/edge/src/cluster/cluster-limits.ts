// Cluster-wide key limits (cluster mode). Every key with a limit (max_concurrent, rpm, tpm, token_budget) has one
// home edge: the live edge with the highest rendezvous hash of (edge id, key id), which every edge computes alike
// from its view of the live edges. The home's governor counts the key for the whole cluster: the edge a request
// reaches asks the home to reserve (request `iop.limits.<home>`, or a direct call when it is the home itself), and
// the run's principal carries the lease (`Principal.lease`) to the edge that admits it, here or forwarded. When
// the run ends, that edge's governor hands the run's tokens to the lease, which tells the home (publish
// `iop.limits.<home>` `release`; releases are idempotent per lease id). agent-contract/inner/edge-cluster.md
// lists what is exact and where the overshoot is bounded (home changes, an unreachable home).
//
// Keys without limits, anonymous runs and single edges never come here: no NATS message on their path.
import type { FabricBus, FabricMsg } from './fabric-bus.js';
import { GovernanceError, type GovernanceErrorCode, type GovernanceLimit } from '../governance/errors.js';
import { periodAt, type Governor, type LimitLease, type SpentTokens } from '../governance/governor.js';
import { hasLimits, type Principal } from '../governance/principal.js';
import type { SharedLimits } from '../governance/shared-limits.js';
import type { Logger } from '../logging.js';
import { fromWirePrincipal, toWirePrincipal, type WirePrincipal } from '../governance/wire-principal.js';

/** Where a lease is held: its home edge and its id there. */
export interface LimitLeaseRef {
  home: string;
  id: string;
}

type LimitsMessage =
  | { op: 'reserve'; from: string; principal: WirePrincipal; estimate: number; child?: boolean }
  | { op: 'release'; id: string; tokens: number }
  /** The leases of this home that runs on `from` still hold (sent periodically; see tick()). */
  | { op: 'open'; from: string; ids: string[] };

type ReserveReply =
  | { ok: true; id: string }
  /** The home could not count (e.g. its usage store failed): the run is counted where it is admitted. */
  | { ok: false; failed: string }
  | {
      ok: false;
      code: GovernanceErrorCode;
      limit: GovernanceLimit;
      message: string;
      retryAfterSeconds: number | null;
    };

/** A run's share of a key's limits, held on the key's home edge. */
export class HomeLimitLease implements LimitLease {
  private finished = false;

  constructor(
    readonly ref: LimitLeaseRef,
    private readonly release: (ref: LimitLeaseRef, tokens: number) => void,
    /** This edge's open leases (reported to their homes until finished or handed off). */
    private readonly open: OpenLimitLeases,
  ) {
    open.add(ref);
  }

  finish(actualTokens: number): void {
    if (this.finished) return;
    this.finished = true;
    this.open.delete(this.ref);
    this.release(this.ref, actualTokens);
  }

  /** Another edge took the run (forwarded): that edge reports the lease open and finishes it. */
  handOff(): void {
    this.open.delete(this.ref);
  }
}

/** Lease ids per home that runs on this edge still hold. */
class OpenLimitLeases {
  readonly byHome = new Map<string, Set<string>>();

  add(ref: LimitLeaseRef): void {
    let ids = this.byHome.get(ref.home);
    if (!ids) {
      ids = new Set();
      this.byHome.set(ref.home, ids);
    }
    ids.add(ref.id);
  }

  delete(ref: LimitLeaseRef): void {
    const ids = this.byHome.get(ref.home);
    if (!ids) return;
    ids.delete(ref.id);
    if (ids.size === 0) this.byHome.delete(ref.home);
  }
}

export interface ClusterLimitsOptions {
  nc: FabricBus;
  edgeId: string;
  /** The other live edges (this one excluded). */
  liveEdges(): string[];
  /** This edge's governor: counts the keys this edge is home to. */
  governor: Governor;
  logger: Logger;
  /** How long a reserve may wait for the home's answer before this edge counts the run itself (default 5 s). */
  timeoutMs?: number;
  /**
   * Tokens a key spent since a time in the other edges' usage stores (each edge records the runs it ran). Asked
   * once per key and budget period by its home, so a budget counts what the whole cluster spent.
   */
  spentElsewhere?: (principalId: string, sinceMs: number) => Promise<number>;
  /** Epoch ms (the edge's clock): budget periods, lease reports. */
  now?: () => number;
  /**
   * A lease no edge reported open for this long is released by its home (default 6 s). Open leases are reported
   * at most every sixth of it (tick()).
   */
  leaseTtlMs?: number;
}

export interface ClusterLimits extends SharedLimits {
  /** The home edge of a key id among the live edges. */
  homeOf(principalId: string): string;
  /**
   * Reserves the key's limits for one run on its home edge. Resolves the principal the run is admitted with: a
   * copy carrying the lease, or the principal itself when it has no limit or the home did not answer (then the
   * edge that admits the run counts it locally). Throws GovernanceError when the home refuses.
   */
  reserve(principal: Principal, estimatedTokens: number, child?: boolean): Promise<Principal>;
  /** The principal of a run forwarded here with a lease another edge reserved. */
  withLimitLease(principal: Principal, ref: LimitLeaseRef): Principal;
  /** Leases this edge holds as a home (tests, metrics). */
  readonly held: number;
  /** Releases the leases an edge that left had reserved here (their runs ended with it). */
  edgeGone(edgeId: string): void;
  /**
   * Called on the heartbeat: reports this edge's open leases to their homes, and (as a home) releases leases no
   * edge has reported open for `leaseTtlMs` (their release was lost).
   */
  tick(): void;
  close(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export { hasLimits } from '../governance/principal.js';

/** FNV-1a over the UTF-16 code units: a cheap, stable 32-bit hash (rendezvous scores). */
function score(edgeId: string, principalId: string): number {
  let hash = 0x811c9dc5;
  const text = `${edgeId}\u0000${principalId}`;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  // A final avalanche so that ids differing only at the end spread over the edges.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash >>> 0;
}

/** The edge with the highest score; ties go to the smaller id (every edge decides alike). */
export function rendezvousHome(edges: readonly string[], principalId: string): string {
  let best = '';
  let bestScore = -1;
  for (const edgeId of edges) {
    const value = score(edgeId, principalId);
    if (value > bestScore || (value === bestScore && edgeId < best)) {
      best = edgeId;
      bestScore = value;
    }
  }
  return best;
}

export function createClusterLimits(options: ClusterLimitsOptions): ClusterLimits {
  const { nc, edgeId, governor, logger } = options;
  const timeoutMs = options.timeoutMs ?? 5000;
  /** Leases this edge holds as the home, by id. */
  const held = new Map<string, { from: string; estimate: number; lease: LimitLease; seenAt: number }>();
  const open = new OpenLimitLeases();
  const leaseTtlMs = options.leaseTtlMs ?? 6000;
  let reportedAt = Number.NEGATIVE_INFINITY;
  let sequence = 0;
  const now = options.now ?? Date.now;
  /** What the other edges had spent per key and budget period, asked once (the promise is shared). */
  const seeds = new Map<string, Promise<number>>();

  /** The other stores' spending of this budget period (undefined: the key has no budget). */
  async function spentBefore(principal: Principal): Promise<SpentTokens | undefined> {
    const budget = principal.tokenBudget;
    const ask = options.spentElsewhere;
    if (!budget || !ask) return undefined;
    const { startMs } = periodAt(now(), budget.per);
    const seedKey = `${principal.id}\u0000${startMs}`;
    let pending = seeds.get(seedKey);
    if (!pending) {
      // Bounded: one entry per key and period; a new period starts the map over.
      if (seeds.size >= 10_000) seeds.clear();
      pending = ask(principal.id, startMs).catch((error: unknown) => {
        logger.warn(
          { principal: principal.id, error: error instanceof Error ? error.message : String(error) },
          'cluster: other edges’ budget spending unknown; counting this edge’s',
        );
        return 0;
      });
      seeds.set(seedKey, pending);
    }
    const spent = await pending;
    return { tokensSince: () => spent };
  }

  function releaseHeld(id: string, tokens: number): void {
    const entry = held.get(id);
    if (!entry) return;
    held.delete(id);
    entry.lease.finish(tokens);
  }

  function markOpen(ids: readonly unknown[]): void {
    const at = now();
    for (const id of ids) {
      const entry = typeof id === 'string' ? held.get(id) : undefined;
      if (entry) entry.seenAt = at;
    }
  }

  function release(ref: LimitLeaseRef, tokens: number): void {
    if (ref.home === edgeId) {
      releaseHeld(ref.id, tokens);
      return;
    }
    if (nc.isClosed()) return;
    nc.publish(
      `iop.limits.${ref.home}`,
      encoder.encode(JSON.stringify({ op: 'release', id: ref.id, tokens } satisfies LimitsMessage)),
    );
  }

  /** Reserves on this edge (it is the key's home): throws GovernanceError on refusal. */
  function reserveHere(
    principal: Principal,
    estimate: number,
    from: string,
    elsewhere: SpentTokens | undefined,
    child: boolean,
  ): LimitLeaseRef {
    const lease = governor.reserve(principal, estimate, elsewhere, child);
    const id = `${edgeId}.${(sequence += 1).toString(36)}`;
    held.set(id, { from, estimate, lease, seenAt: now() });
    return { home: edgeId, id };
  }

  const subscription = nc.subscribe(`iop.limits.${edgeId}`, {
    callback: (error, msg) => {
      if (error) return;
      let message: LimitsMessage;
      try {
        message = JSON.parse(decoder.decode(msg.data)) as LimitsMessage;
      } catch {
        logger.warn({}, 'cluster: malformed limits message ignored');
        return;
      }
      if (message.op === 'release') {
        releaseHeld(message.id, Math.max(0, Number(message.tokens) || 0));
        return;
      }
      if (message.op === 'open') {
        if (Array.isArray(message.ids)) markOpen(message.ids);
        return;
      }
      if (message.op !== 'reserve') return;
      const principal = fromWirePrincipal(message.principal);
      if (principal.tokenBudget) {
        void spentBefore(principal).then((elsewhere) => answerReserve(msg, message, principal, elsewhere));
      } else {
        answerReserve(msg, message, principal, undefined);
      }
    },
  });

  function answerReserve(
    msg: FabricMsg,
    message: Extract<LimitsMessage, { op: 'reserve' }>,
    principal: Principal,
    elsewhere: SpentTokens | undefined,
  ): void {
    let reply: ReserveReply;
    try {
      const ref = reserveHere(
        principal,
        Math.max(0, Number(message.estimate) || 0),
        message.from,
        elsewhere,
        message.child === true,
      );
      reply = { ok: true, id: ref.id };
    } catch (caught) {
      if (!(caught instanceof GovernanceError)) {
        const text = caught instanceof Error ? caught.message : String(caught);
        logger.warn({ error: text }, 'cluster: reserving a key’s limits failed');
        msg.respond(encoder.encode(JSON.stringify({ ok: false, failed: text } satisfies ReserveReply)));
        return;
      }
      reply = {
        ok: false,
        code: caught.code,
        limit: caught.limit,
        message: caught.message,
        retryAfterSeconds: caught.retryAfterSeconds ?? null,
      };
    }
    msg.respond(encoder.encode(JSON.stringify(reply)));
  }

  const homeOf = (principalId: string): string =>
    rendezvousHome([edgeId, ...options.liveEdges()], principalId);

  return {
    homeOf,
    async reserve(principal, estimatedTokens, child = false) {
      if (!hasLimits(principal)) return principal;
      const estimate = Math.max(0, Math.ceil(estimatedTokens));
      const home = homeOf(principal.id);
      if (home === edgeId) {
        const elsewhere = principal.tokenBudget ? await spentBefore(principal) : undefined;
        return {
          ...principal,
          lease: new HomeLimitLease(
            reserveHere(principal, estimate, edgeId, elsewhere, child),
            release,
            open,
          ),
        };
      }
      let reply: ReserveReply;
      try {
        const message: LimitsMessage = {
          op: 'reserve',
          from: edgeId,
          principal: toWirePrincipal(principal),
          estimate,
          // A child run (an agent's model call): its parent holds the key's max_concurrent slot.
          ...(child ? { child } : {}),
        };
        const response = await nc.request(`iop.limits.${home}`, encoder.encode(JSON.stringify(message)), {
          timeout: timeoutMs,
        });
        reply = JSON.parse(decoder.decode(response.data)) as ReserveReply;
        if (!reply.ok && 'failed' in reply) throw new Error(reply.failed);
      } catch (caught) {
        // The home went away (its state not yet expired) or is stuck: this run is counted where it is admitted.
        logger.warn(
          { principal: principal.id, home, error: caught instanceof Error ? caught.message : String(caught) },
          'cluster: the key’s home edge did not answer; counting this run locally',
        );
        return principal;
      }
      if (!reply.ok && !('failed' in reply)) {
        throw new GovernanceError(
          reply.code,
          reply.limit,
          reply.message,
          reply.retryAfterSeconds ?? undefined,
        );
      }
      return reply.ok
        ? { ...principal, lease: new HomeLimitLease({ home, id: reply.id }, release, open) }
        : principal;
    },
    withLimitLease(principal, ref) {
      return { ...principal, lease: new HomeLimitLease(ref, release, open) };
    },
    get held() {
      return held.size;
    },
    edgeGone(gone) {
      for (const [id, entry] of held) if (entry.from === gone) releaseHeld(id, entry.estimate);
    },
    tick() {
      const at = now();
      if (at - reportedAt >= leaseTtlMs / 6) {
        reportedAt = at;
        for (const [home, ids] of open.byHome) {
          if (home === edgeId) markOpen([...ids]);
          else if (!nc.isClosed()) {
            const message: LimitsMessage = { op: 'open', from: edgeId, ids: [...ids] };
            nc.publish(`iop.limits.${home}`, encoder.encode(JSON.stringify(message)));
          }
        }
      }
      for (const [id, entry] of held) {
        if (at - entry.seenAt > leaseTtlMs) {
          logger.warn({ lease: id, from: entry.from }, 'cluster: a lease no edge holds any more is released');
          releaseHeld(id, entry.estimate);
        }
      }
    },
    close() {
      subscription.unsubscribe();
    },
  };
}
