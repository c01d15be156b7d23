// Cluster-wide key limits (cluster mode). Every key with a limit (max_concurrent, rpm, tpm, token_budget) has one
// home edge: the live edge with the highest rendezvous hash of (edge id, key id), which every edge computes alike
// from its view of the live edges. The home's governor counts the key for the whole cluster: the edge a request
// reaches asks the home to reserve (request `iop.limits.<home>`, or a direct call when it is the home itself), and
// the run's principal carries the lease (`Principal.lease`) to the edge that admits it, here or forwarded. When
// the run ends, that edge's governor hands the run's tokens to the lease, which tells the home (publish
// `iop.limits.<home>` `release`; releases are idempotent per lease id). agent-contract/inner/edge-cluster.md
// lists what is exact and where the overshoot is bounded (home changes).
//
// Fail closed: when the home cannot be asked (no sealed answer in time, gone, or it could not count), the run is
// refused (rate_limited, naming the home edge), never counted here instead; a budget whose other edges' spending
// is not fully known is refused the same way, and that partial figure is not kept. A lease is held by the edge
// that reserved it and the edges it forwarded the run to (`grant`, sent before the forward): a release or an
// `open` report from any other edge is ignored.
//
// Keys without limits, anonymous runs and single edges never come here: no NATS message on their path.
import type { FabricBus, FabricMsg } from './fabric-bus.js';
import { GovernanceError, type GovernanceErrorCode, type GovernanceLimit } from '../governance/errors.js';
import { periodAt, type Governor, type LimitLease, type SpentTokens } from '../governance/governor.js';
import { hasLimits, type Principal } from '../governance/principal.js';
import type { SharedLimits } from '../governance/shared-limits.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import { fromWirePrincipal, toWirePrincipal, type WirePrincipal } from '../governance/wire-principal.js';

/** Where a lease is held: its home edge and its id there. */
export interface LimitLeaseRef {
  home: string;
  id: string;
}

type LimitsMessage =
  | {
      op: 'reserve';
      from: string;
      principal: WirePrincipal;
      estimate: number;
      boot?: string;
      child?: boolean;
    }
  | { op: 'release'; id: string; tokens: number }
  /** The lease's holder forwarded its run to `to`: that edge may report it open and release it too. */
  | { op: 'grant'; id: string; to: string }
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
  /** How long a reserve may wait for the home's answer before the run is refused (default 5 s). */
  timeoutMs?: number;
  /**
   * Tokens a key spent since a time in the other edges' usage stores (each edge records the runs it ran). Asked
   * once per key and budget period by its home, so a budget counts what the whole cluster spent.
   */
  spentElsewhere?: (principalId: string, sinceMs: number) => Promise<number>;
  /** The edge's clock (epoch ms): budget periods, lease reports. */
  clock: Clock;
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
   * copy carrying the lease, or the principal itself when it has no limit. Throws GovernanceError when the home
   * refuses, and when it cannot be asked (`rate_limited`, naming the home edge).
   */
  reserve(principal: Principal, estimatedTokens: number, child?: boolean): Promise<Principal>;
  /** This edge forwards the lease's run to `edgeId`: the home takes that edge's release and reports too. */
  grant(ref: LimitLeaseRef, edgeId: string): void;
  /** The principal of a run forwarded here with a lease another edge reserved. */
  withLimitLease(principal: Principal, ref: LimitLeaseRef): Principal;
  /** Leases this edge holds as a home (tests, metrics). */
  readonly held: number;
  /**
   * Releases the leases an edge that left had reserved here (their runs ended with it); `newBoot`: it restarted,
   * and what its new life reserved is kept.
   */
  edgeGone(edgeId: string, newBoot?: string): void;
  /**
   * Called on the heartbeat: reports this edge's open leases to their homes, and (as a home) releases leases no
   * edge has reported open for `leaseTtlMs` (their release was lost).
   */
  tick(): void;
  close(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The limit a refusal names: the first the key has. */
function limitOf(principal: Principal): GovernanceLimit {
  if (principal.rpm !== null) return 'rpm';
  if (principal.tpm !== null) return 'tpm';
  if (principal.maxConcurrent !== null) return 'max_concurrent';
  return 'token_budget';
}

/** The refusal of a run whose key's limits cannot be counted (its home edge cannot be asked). */
function unavailable(principal: Principal, home: string, why: string): GovernanceError {
  return new GovernanceError(
    'rate_limited',
    limitOf(principal),
    `The limits of this key are counted on edge ${home}, and ${why}; the request is refused rather than counted elsewhere`,
    1,
  );
}

export function createClusterLimits(options: ClusterLimitsOptions): ClusterLimits {
  return new FabricClusterLimits(options);
}

/** A lease this edge holds as the home; `holders`: the edges whose release and reports count. */
interface HeldLease {
  from: string;
  /** The boot id of the process that reserved it ('' when unknown). */
  fromBoot: string;
  holders: Set<string>;
  estimate: number;
  lease: LimitLease;
  seenAt: number;
}

/**
 * Both sides of the cluster's key limits on one edge: as a key's home it holds leases (`held`) and answers the
 * `iop.limits.<edge>` subject; as the edge a request reached it asks the home (`reserve`) and reports the leases
 * its runs hold open (`tick`).
 */
class FabricClusterLimits implements ClusterLimits {
  private readonly edgeId: string;
  private readonly timeoutMs: number;
  private readonly leaseTtlMs: number;
  private readonly leases = new Map<string, HeldLease>();
  private readonly open = new OpenLimitLeases();
  /** What the other edges had spent per key and budget period, asked once (the promise is shared). */
  private readonly seeds = new Map<string, Promise<number>>();
  private readonly subscription: ReturnType<FabricBus['subscribe']>;
  private reportedAt = Number.NEGATIVE_INFINITY;
  private sequence = 0;

  constructor(private readonly options: ClusterLimitsOptions) {
    this.edgeId = options.edgeId;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.leaseTtlMs = options.leaseTtlMs ?? 6000;
    this.subscription = options.nc.subscribe(`iop.limits.${options.edgeId}`, {
      bound: true,
      callback: (error, msg) => {
        if (!error) this.onMessage(msg);
      },
    });
  }

  readonly homeOf = (principalId: string): string =>
    rendezvousHome([this.edgeId, ...this.options.liveEdges()], principalId);

  /** Handed to every lease: its run's end reaches the home (here, or a message to it). */
  private readonly release = (ref: LimitLeaseRef, tokens: number): void => {
    if (ref.home === this.edgeId) {
      this.releaseHeld(ref.id, tokens);
      return;
    }
    this.tell(ref.home, { op: 'release', id: ref.id, tokens });
  };

  async reserve(principal: Principal, estimatedTokens: number, child = false): Promise<Principal> {
    if (!hasLimits(principal)) return principal;
    const estimate = Math.max(0, Math.ceil(estimatedTokens));
    const home = this.homeOf(principal.id);
    if (home === this.edgeId) {
      const elsewhere = principal.tokenBudget ? await this.spentBefore(principal) : undefined;
      const ref = this.reserveHere(
        principal,
        estimate,
        this.edgeId,
        this.options.nc.bootId,
        elsewhere,
        child,
      );
      return { ...principal, lease: new HomeLimitLease(ref, this.release, this.open) };
    }
    const reply = await this.askHome(principal, home, estimate, child);
    if (!reply.ok && !('failed' in reply)) {
      throw new GovernanceError(reply.code, reply.limit, reply.message, reply.retryAfterSeconds ?? undefined);
    }
    return reply.ok
      ? { ...principal, lease: new HomeLimitLease({ home, id: reply.id }, this.release, this.open) }
      : principal;
  }

  grant(ref: LimitLeaseRef, to: string): void {
    if (ref.home === this.edgeId) this.leases.get(ref.id)?.holders.add(to);
    else this.tell(ref.home, { op: 'grant', id: ref.id, to });
  }

  withLimitLease(principal: Principal, ref: LimitLeaseRef): Principal {
    return { ...principal, lease: new HomeLimitLease(ref, this.release, this.open) };
  }

  get held(): number {
    return this.leases.size;
  }

  edgeGone(gone: string, newBoot?: string): void {
    for (const [id, entry] of this.leases) {
      if (entry.from === gone && (newBoot === undefined || entry.fromBoot !== newBoot)) {
        this.releaseHeld(id, entry.estimate);
      }
    }
  }

  tick(): void {
    const at = this.now();
    if (at - this.reportedAt >= this.leaseTtlMs / 6) {
      this.reportedAt = at;
      for (const [home, ids] of this.open.byHome) {
        if (home === this.edgeId) this.markOpen([...ids], this.edgeId);
        else this.tell(home, { op: 'open', from: this.edgeId, ids: [...ids] });
      }
    }
    for (const [id, entry] of this.leases) {
      if (at - entry.seenAt > this.leaseTtlMs) {
        this.options.logger.warn(
          { lease: id, from: entry.from },
          'cluster: a lease no edge holds any more is released',
        );
        this.releaseHeld(id, entry.estimate);
      }
    }
  }

  close(): void {
    this.subscription.unsubscribe();
  }

  private now(): number {
    return this.options.clock.now();
  }

  /** Asks the key's home to reserve; throws the refusal when it cannot be asked (never counted here instead). */
  private async askHome(
    principal: Principal,
    home: string,
    estimate: number,
    child: boolean,
  ): Promise<ReserveReply> {
    try {
      const message: LimitsMessage = {
        op: 'reserve',
        from: this.edgeId,
        principal: toWirePrincipal(principal),
        estimate,
        boot: this.options.nc.bootId,
        // A child run (an agent's model call): its parent holds the key's max_concurrent slot.
        ...(child ? { child } : {}),
      };
      const response = await this.options.nc.request(
        `iop.limits.${home}`,
        encoder.encode(JSON.stringify(message)),
        { timeout: this.timeoutMs, to: home },
      );
      const reply = JSON.parse(decoder.decode(response.data)) as ReserveReply;
      if (!reply.ok && 'failed' in reply) throw new Error(reply.failed);
      return reply;
    } catch (caught) {
      // The home is stuck, left, or could not count: the run is refused, never counted here instead.
      this.options.logger.warn(
        { principal: principal.id, home, error: errorText(caught) },
        'cluster: the key’s home edge could not be asked; run refused',
      );
      throw unavailable(principal, home, `it could not be asked: ${errorText(caught)}`);
    }
  }

  /** The other stores' spending of this budget period (undefined: the key has no budget). */
  private async spentBefore(principal: Principal): Promise<SpentTokens | undefined> {
    const budget = principal.tokenBudget;
    const ask = this.options.spentElsewhere;
    if (!budget || !ask) return undefined;
    const { startMs } = periodAt(this.now(), budget.per);
    const seedKey = `${principal.id}\u0000${startMs}`;
    let pending = this.seeds.get(seedKey);
    if (!pending) {
      // Bounded: one entry per key and period; a new period starts the map over.
      if (this.seeds.size >= 10_000) this.seeds.clear();
      const asked = ask(principal.id, startMs);
      pending = asked;
      this.seeds.set(seedKey, asked);
      // A figure that is not the whole cluster's is never kept: the next run asks again.
      asked.catch(() => {
        if (this.seeds.get(seedKey) === asked) this.seeds.delete(seedKey);
      });
    }
    let spent: number;
    try {
      spent = await pending;
    } catch (error) {
      throw unavailable(
        principal,
        this.edgeId,
        `the other edges' spending of its budget is unknown: ${errorText(error)}`,
      );
    }
    return { tokensSince: () => spent };
  }

  private releaseHeld(id: string, tokens: number): void {
    const entry = this.leases.get(id);
    if (!entry) return;
    this.leases.delete(id);
    entry.lease.finish(tokens);
  }

  private markOpen(ids: readonly unknown[], by: string): void {
    const at = this.now();
    for (const id of ids) {
      const entry = typeof id === 'string' ? this.leases.get(id) : undefined;
      if (entry?.holders.has(by)) entry.seenAt = at;
    }
  }

  /** Sends a limits message to a home edge; a home that is not a live member any more holds nothing to tell. */
  private tell(home: string, message: LimitsMessage): void {
    const { nc, logger } = this.options;
    if (nc.isClosed()) return;
    try {
      nc.publish(`iop.limits.${home}`, encoder.encode(JSON.stringify(message)), { to: home });
    } catch (error) {
      logger.debug({ home, op: message.op, error: errorText(error) }, 'cluster: limits message not sent');
    }
  }

  /** Reserves on this edge (it is the key's home): throws GovernanceError on refusal. */
  private reserveHere(
    principal: Principal,
    estimate: number,
    from: string,
    fromBoot: string,
    elsewhere: SpentTokens | undefined,
    child: boolean,
  ): LimitLeaseRef {
    const lease = this.options.governor.reserve(principal, estimate, elsewhere, child);
    const id = `${this.edgeId}.${(this.sequence += 1).toString(36)}`;
    this.leases.set(id, { from, fromBoot, holders: new Set([from]), estimate, lease, seenAt: this.now() });
    return { home: this.edgeId, id };
  }

  /** A message on `iop.limits.<this edge>`: only an edge holding a lease speaks for it (the fabric key
   * authenticated the sender). */
  private onMessage(msg: FabricMsg): void {
    let message: LimitsMessage;
    try {
      message = JSON.parse(decoder.decode(msg.data)) as LimitsMessage;
    } catch {
      this.options.logger.warn({}, 'cluster: malformed limits message ignored');
      return;
    }
    switch (message.op) {
      case 'release':
        if (this.leases.get(message.id)?.holders.has(msg.sender)) {
          this.releaseHeld(message.id, Math.max(0, Number(message.tokens) || 0));
        } else {
          this.options.logger.debug(
            { lease: message.id, sender: msg.sender },
            'cluster: a release from a non-holder ignored',
          );
        }
        return;
      case 'open':
        if (Array.isArray(message.ids)) this.markOpen(message.ids, msg.sender);
        return;
      case 'grant': {
        const entry = this.leases.get(message.id);
        if (entry?.holders.has(msg.sender) && typeof message.to === 'string') entry.holders.add(message.to);
        return;
      }
      case 'reserve':
        if (message.from === msg.sender) this.onReserve(msg, message);
        return;
    }
  }

  private onReserve(msg: FabricMsg, message: Extract<LimitsMessage, { op: 'reserve' }>): void {
    const principal = fromWirePrincipal(message.principal);
    if (!principal.tokenBudget) {
      this.answerReserve(msg, message, principal, undefined);
      return;
    }
    void this.spentBefore(principal).then(
      (elsewhere) => this.answerReserve(msg, message, principal, elsewhere),
      (caught: unknown) => {
        // The home could not count the budget: the requester refuses the run.
        msg.respond(
          encoder.encode(JSON.stringify({ ok: false, failed: errorText(caught) } satisfies ReserveReply)),
        );
      },
    );
  }

  private answerReserve(
    msg: FabricMsg,
    message: Extract<LimitsMessage, { op: 'reserve' }>,
    principal: Principal,
    elsewhere: SpentTokens | undefined,
  ): void {
    let reply: ReserveReply;
    try {
      const ref = this.reserveHere(
        principal,
        Math.max(0, Number(message.estimate) || 0),
        message.from,
        typeof message.boot === 'string' ? message.boot : '',
        elsewhere,
        message.child === true,
      );
      reply = { ok: true, id: ref.id };
    } catch (caught) {
      if (!(caught instanceof GovernanceError)) {
        const text = caught instanceof Error ? caught.message : String(caught);
        this.options.logger.warn({ error: text }, 'cluster: reserving a key’s limits failed');
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
}
