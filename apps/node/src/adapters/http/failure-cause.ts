// The cause code of a failed upstream request (HealthCause): from an UpstreamError's code, then from the socket,
// DNS or TLS error code underneath it (the `cause` chain); and its description in words (describeFailure). Used
// for health and discovery probes, so the node log and `nodes list` can tell "nothing listens" from "certificate
// rejected" from "404" from "no answer".
import type { HealthCause } from '../health-probe-result.js';
import { UpstreamCancelled, UpstreamError } from './upstream-error.js';

const SOCKET_CAUSES: Readonly<Record<string, HealthCause>> = {
  ECONNREFUSED: 'connection_refused',
  ETIMEDOUT: 'timeout',
  ECONNRESET: 'connection_reset',
  EPIPE: 'connection_reset',
  ECONNABORTED: 'connection_reset',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_NONAME: 'dns',
  EAI_FAIL: 'dns',
  EHOSTUNREACH: 'host_unreachable',
  ENETUNREACH: 'host_unreachable',
  EHOSTDOWN: 'host_unreachable',
  ENETDOWN: 'host_unreachable',
  EADDRNOTAVAIL: 'host_unreachable',
  EPROTO: 'tls',
  // The node's own client (http1-head.ts): a response it cannot parse.
  ERR_HTTP_PROTOCOL: 'invalid_response',
};

/** OpenSSL's certificate verification codes (node's `error.code` for a rejected certificate) and TLS errors. */
function isTlsCode(code: string): boolean {
  return (
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.includes('CERT') ||
    code.startsWith('UNABLE_TO_') ||
    code === 'HOSTNAME_MISMATCH'
  );
}

/** The first error `code` (a string) found along `error`'s cause chain that names a known cause. */
function codeCause(error: unknown): HealthCause | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth += 1) {
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'string' && code !== '') {
      const known = SOCKET_CAUSES[code];
      if (known !== undefined) return known;
      if (isTlsCode(code)) return 'tls';
    }
    current = cause;
  }
  return undefined;
}

/** Some error along the cause chain is a socket call's (`syscall`: connect, read, write...). */
function isSocketError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth += 1) {
    const { syscall, cause } = current as { syscall?: unknown; cause?: unknown };
    if (typeof syscall === 'string' && syscall !== '') return true;
    current = cause;
  }
  return false;
}

/** The cause code of a failed request or probe. */
export function failureCause(error: unknown): HealthCause {
  if (error instanceof UpstreamCancelled) return 'cancelled';
  if (error instanceof UpstreamError) {
    if (error.status !== undefined) return 'http_status';
    if (error.code === 'upstream_timeout') return 'timeout';
    const underneath = codeCause(error.cause);
    if (underneath !== undefined) return underneath;
    if (error.code === 'upstream_unreachable') return 'network';
    return error.cause instanceof SyntaxError || /invalid JSON/i.test(error.message)
      ? 'invalid_response'
      : 'error';
  }
  const underneath = codeCause(error);
  if (underneath !== undefined) return underneath;
  if (isSocketError(error)) return 'network';
  return error instanceof SyntaxError ? 'invalid_response' : 'error';
}

/**
 * The innermost useful description of a fetch error (`connect ECONNREFUSED 127.0.0.1:1`, `other side closed`).
 * Duck-typed on purpose: fetch's errors may come from another realm (test VMs), where `instanceof Error` fails.
 */
export function describeFailure(error: unknown): string {
  let current: unknown = error;
  let description = String(error);
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const { message, code, cause } = current as { message?: unknown; code?: unknown; cause?: unknown };
    const text = typeof message === 'string' ? message : '';
    if (typeof code === 'string' && code !== '')
      description = text.includes(code) ? text : `${code} ${text}`.trim();
    else if (text !== '') description = text;
    current = cause;
  }
  return description;
}
