// Listen addresses on the edge, for every listener (node transport, admin gRPC, OpenAI, A2A, bootstrap, metrics)
// and the CLIs that dial them: parsing with the config's grammar (@iop/config) and each caller's typed error,
// formatting for bind and dial, and the loopback rules.
import type { AddressInfo } from 'node:net';
import { parseListenAddress as parseListenGrammar, type ListenAddress } from '@iop/config';

export type { ListenAddress };

/**
 * `host:port`, `[v6]:port` or `:port` (every interface) → `{ host, port }`; surrounding spaces are ignored.
 * Anything else throws `invalid(message)`: callers pass their own typed error, a RangeError by default.
 */
export function parseListenAddress(
  value: string,
  invalid: (message: string) => Error = (message) => new RangeError(message),
): ListenAddress {
  const parsed = parseListenGrammar(value.trim());
  if (!parsed) throw invalid(`invalid listen address "${value}": expected host:port`);
  return parsed;
}

/** `host:port`, with IPv6 hosts in brackets: the form net, grpc-js and URLs take. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The address a server actually bound (port 0 resolved). */
export function boundAddress(address: AddressInfo | string | null): string {
  if (address === null) return 'unbound';
  if (typeof address === 'string') return address;
  return formatHostPort(address.address, address.port);
}

/** Where a client on this machine reaches a listener: wildcard hosts become loopback. */
export function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}

/** A URL clients on this host can use for a bound address (wildcards become loopback). */
export function localUrl(host: string, port: number): string {
  return `http://${formatHostPort(reachableHost(host), port)}`;
}

// The loopback rule lives with the listen-address grammar in @iop/config (its exposure checks use it too).
export { isLoopbackHost } from '@iop/config';
