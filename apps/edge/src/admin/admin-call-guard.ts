// Who may call an EdgeAdmin RPC: a call naming another host than this listener is refused first
// (PERMISSION_DENIED `host_not_allowed`), then its bearer key decides its role — `operator` (the admin_token
// shortcut or an operator key) may call everything, `read` only READ_RPCS; a missing or wrong key is
// UNAUTHENTICATED. With neither token nor keys the API is open (the server allows that on loopback only).
import { createHash, timingSafeEqual } from 'node:crypto';
import { status, type Metadata } from '@grpc/grpc-js';
import type { AdminKeyConfig, AdminRole } from '@iop/config';
import type { HostGuard } from '../http/host-guard.js';
import { AdminCallError } from './grpc-status.js';

/** RPCs a `read` key may call; every other RPC needs `operator`. */
const READ_RPCS: ReadonlySet<string> = new Set(['ListNodes', 'ListProviders', 'WatchEvents', 'GetUsage']);

export interface AdminCallGuardDeps {
  /** Required bearer token (an operator key); '' or undefined = none. */
  token?: string;
  /** Named keys with a role (`refresh.admin_keys`). */
  keys?: readonly AdminKeyConfig[];
  /** The listener's `:authority` check and bound port; none = unchecked. */
  authority?: { guard: HostGuard; port: () => number };
}

/** The refusal of RPC `name` called on `host` with `metadata`, or undefined when the call may go ahead. */
export type AdminCallGuard = (name: string, host: string, metadata: Metadata) => AdminCallError | undefined;

export function createAdminCallGuard(deps: AdminCallGuardDeps): AdminCallGuard {
  const credentials: { digest: Buffer; role: AdminRole }[] = [
    ...(deps.token ? [{ digest: digest(deps.token), role: 'operator' as const }] : []),
    ...(deps.keys ?? []).map((key) => ({ digest: Buffer.from(key.key_sha256, 'hex'), role: key.role })),
  ];

  /** The caller's role: `operator` when no credential is configured, undefined when the key is missing or wrong. */
  function roleOf(metadata: Metadata): AdminRole | undefined {
    if (credentials.length === 0) return 'operator';
    const value = metadata.get('authorization')[0];
    const header = typeof value === 'string' ? value : value?.toString('utf8');
    const match = header ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    if (!match?.[1]) return undefined;
    // Compare digests (equal length for timingSafeEqual) against every credential, without an early exit.
    const presented = digest(match[1]);
    let role: AdminRole | undefined;
    for (const credential of credentials) {
      if (timingSafeEqual(presented, credential.digest) && role !== 'operator') role = credential.role;
    }
    return role;
  }

  /** A call whose `:authority` is not this listener (gRPC has no local address: the bound port and interfaces). */
  function authorityRefusal(host: string): AdminCallError | undefined {
    if (!deps.authority) return undefined;
    const refused = deps.authority.guard.checkHost(host, { port: deps.authority.port() });
    return refused ? new AdminCallError(status.PERMISSION_DENIED, refused.code, refused.message) : undefined;
  }

  /** The error for a call `name` with this role, or undefined when allowed. */
  function refusal(name: string, role: AdminRole | undefined): AdminCallError | undefined {
    if (role === undefined) return unauthenticated();
    if (role === 'operator' || READ_RPCS.has(name)) return undefined;
    return new AdminCallError(
      status.PERMISSION_DENIED,
      'forbidden',
      `${name} needs an operator key; this key has the read role`,
    );
  }

  function unauthenticated(): AdminCallError {
    return new AdminCallError(status.UNAUTHENTICATED, 'unauthenticated', 'missing or invalid admin token');
  }

  return (name, host, metadata) => authorityRefusal(host) ?? refusal(name, roleOf(metadata));
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
