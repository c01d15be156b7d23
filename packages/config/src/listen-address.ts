// The one grammar of listen addresses (`host:port`, `[v6]:port`, `:port`): config validation accepts exactly
// what the edge's listeners can parse and bind, so a valid edge.yaml never fails later at start.

export interface ListenAddress {
  /** IPv6 without brackets; an empty host (`:port`) means every interface, `0.0.0.0`. */
  host: string;
  port: number;
}

const LISTEN_ADDRESS = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/;

/** The host and port of a listen address, or undefined when it is not one (port 0-65535, 0 = ephemeral). */
export function parseListenAddress(value: string): ListenAddress | undefined {
  const match = LISTEN_ADDRESS.exec(value);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65_535) return undefined;
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** `host:port`, `:port` or `[v6]:port` with port 0-65535. */
export function isListenAddress(value: string): boolean {
  return parseListenAddress(value) !== undefined;
}

/** localhost, 127.0.0.0/8, ::1 and IPv4-mapped 127.x. Wildcards (0.0.0.0, ::) are not loopback. */
export function isLoopbackHost(host: string): boolean {
  const normalized = host.toLowerCase();
  if (normalized === 'localhost' || normalized === '::1') return true;
  const ipv4 = normalized.startsWith('::ffff:') ? normalized.slice('::ffff:'.length) : normalized;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ipv4);
}

/** True when a listen address binds only loopback (false for wildcards and unparsable text). */
export function isLoopbackListen(value: string): boolean {
  const parsed = parseListenAddress(value);
  return parsed !== undefined && isLoopbackHost(parsed.host);
}
