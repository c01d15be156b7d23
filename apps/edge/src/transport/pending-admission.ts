// Decides what happens to a new connection on the node port while others are still in the handshake (connected,
// not yet registered). Pure, so the policy is unit-testable without sockets.
//
// A peer address may hold at most `maxPerAddress` such connections and all peers together `maxTotal`. At a cap the
// new connection is not refused: the pending connection that has been idle longest (silent since it connected
// first, then the one whose bytes stopped longest ago) is evicted instead, so sockets an attacker opens and leaves
// idle can never lock a real node out — a node sends its register request at once and is no longer evictable once
// that frame is complete. Only when every pending connection is already registering is the new one refused.

export interface PendingConnectionView<T> {
  /** The connection itself (returned as the victim). */
  handle: T;
  /** Remote IP address (no port). */
  address: string;
  /** When it was accepted. */
  acceptedAtMs: number;
  /** Bytes received from the peer so far. */
  bytesReceived: number;
  /** Its first frame is complete and being evaluated; evicting it would drop a real registration. */
  registering: boolean;
}

export interface PendingLimits {
  maxTotal: number;
  maxPerAddress: number;
}

export type AdmissionDecision<T> =
  | { action: 'admit' }
  | { action: 'evict'; victim: T; scope: 'address' | 'total' }
  | { action: 'refuse'; scope: 'address' | 'total' };

export function admitPending<T>(
  pending: readonly PendingConnectionView<T>[],
  address: string,
  limits: PendingLimits,
): AdmissionDecision<T> {
  const sameAddress = pending.filter((view) => view.address === address);
  if (sameAddress.length >= limits.maxPerAddress) {
    const victim = oldestIdle(sameAddress);
    return victim
      ? { action: 'evict', victim: victim.handle, scope: 'address' }
      : { action: 'refuse', scope: 'address' };
  }
  if (pending.length >= limits.maxTotal) {
    // Evict from the address holding the most pending connections: a flood from one place pays for itself.
    const counts = new Map<string, number>();
    for (const view of pending) counts.set(view.address, (counts.get(view.address) ?? 0) + 1);
    const ranked = [...pending].sort((a, b) => (counts.get(b.address) ?? 0) - (counts.get(a.address) ?? 0));
    const busiest = ranked.filter((view) => view.address === ranked[0]?.address);
    const victim = oldestIdle(busiest) ?? oldestIdle(pending);
    return victim
      ? { action: 'evict', victim: victim.handle, scope: 'total' }
      : { action: 'refuse', scope: 'total' };
  }
  return { action: 'admit' };
}

/** Silent connections first (oldest first), then partial senders (oldest first); never one that is registering. */
function oldestIdle<T>(views: readonly PendingConnectionView<T>[]): PendingConnectionView<T> | undefined {
  let best: PendingConnectionView<T> | undefined;
  for (const view of views) {
    if (view.registering) continue;
    if (!best) {
      best = view;
      continue;
    }
    const viewSilent = view.bytesReceived === 0;
    const bestSilent = best.bytesReceived === 0;
    if (viewSilent !== bestSilent) {
      if (viewSilent) best = view;
      continue;
    }
    if (view.acceptedAtMs < best.acceptedAtMs) best = view;
  }
  return best;
}
