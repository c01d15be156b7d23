// Live revocation: every connected node keeps proving that the token it registered with is still valid. The
// transport tells this checker the SHA-256 of each accepted connection's token; every `intervalMs` (default
// 500 ms, so a rotation or `node revoke` takes effect well within 2 s) the checker re-verifies each live link's
// digest against the node store — which re-reads nodes.json when another process (`iop-edge node register`,
// `node revoke`) changed it; a pass costs one stat while the file is unchanged — and closes links whose token no
// longer verifies with Goodbye `token-revoked`. The
// node then reconnects with its old token and is rejected as `bad_token` (or `unknown_node` after a revoke).
// An unreadable store never disconnects anyone: that pass is skipped and logged.
import { CLOSE_REASONS } from '@iop/wire';
import { repeat, type Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import type { NodeLink } from './node-link.js';
import type { NodeRegistry } from './node-registry.js';
import { sha256Hex, type NodeStore } from './node-store.js';

export interface TokenRevocation {
  /** Remembers the token `link` registered with (only its SHA-256; forgotten with the link). */
  track(link: NodeLink, token: string): void;
  /** One pass over the registry; resolves when the links it closed are closed. */
  check(): Promise<void>;
  /** Starts the periodic pass (every intervalMs; none when 0). */
  start(): void;
  /** Stops the periodic pass. Idempotent. */
  stop(): void;
}

export interface TokenRevocationOptions {
  store: Pick<NodeStore, 'verifyDigest' | 'revision'>;
  registry: Pick<NodeRegistry, 'links'>;
  logger: Logger;
  /** Runs the periodic pass. */
  clock: Clock;
  /** 0 = no timer (tests call check()). */
  intervalMs?: number;
}

export function createTokenRevocation(options: TokenRevocationOptions): TokenRevocation {
  const digests = new WeakMap<NodeLink, string>();
  let running: Promise<void> | undefined;
  let storeProblem: string | undefined;
  // Tokens only change with the store file (config tokens are fixed for the process; every new link was just
  // verified at registration), so links are re-verified only when the file's revision moved.
  let verifiedRevision: string | undefined;

  async function pass(): Promise<void> {
    let revision: string;
    try {
      // Throws when nodes.json cannot be read: decide nothing on a half-known store.
      revision = await options.store.revision();
      storeProblem = undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== storeProblem) {
        options.logger.error({ error: message }, 'token revocation check skipped: node store unreadable');
        storeProblem = message;
      }
      return;
    }
    if (revision === verifiedRevision) return;
    verifiedRevision = revision;
    const tracked = options.registry.links().filter((link) => digests.has(link));
    // All at once: the store serves verifications that arrive together from one read of its changed file, so a
    // pass over 10,000 links reads and parses it once instead of waiting on each verification in turn.
    const verdicts = await Promise.all(
      tracked.map(async (link) => {
        const digest = digests.get(link);
        return digest === undefined ? undefined : options.store.verifyDigest(link.nodeId, digest);
      }),
    );
    const closing: Promise<void>[] = [];
    for (const [index, link] of tracked.entries()) {
      const verdict = verdicts[index];
      if (verdict === undefined || verdict.ok) continue;
      digests.delete(link);
      options.logger.warn(
        { nodeId: link.nodeId, reason: verdict.reason, remoteAddress: link.info.remoteAddress },
        'closing a node whose token was rotated or revoked',
      );
      closing.push(link.close(CLOSE_REASONS.tokenRevoked, { goodbye: true }).catch(() => undefined));
    }
    await Promise.all(closing);
  }

  function check(): Promise<void> {
    // One pass at a time: a slow disk must not pile passes up behind each other.
    running ??= pass()
      .catch((error: unknown) =>
        options.logger.error(
          { error: error instanceof Error ? error.message : String(error) },
          'token revocation check failed',
        ),
      )
      .finally(() => (running = undefined));
    return running;
  }

  const intervalMs = options.intervalMs ?? 500;
  let stopTimer: (() => void) | undefined;
  return {
    track(link, token) {
      digests.set(link, sha256Hex(token));
    },
    check,
    start() {
      if (stopTimer !== undefined || intervalMs <= 0) return;
      stopTimer = repeat(options.clock, intervalMs, () => void check());
    },
    stop() {
      stopTimer?.();
      stopTimer = undefined;
    },
  };
}
