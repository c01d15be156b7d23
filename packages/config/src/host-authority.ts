// The grammar of a host authority — `host`, `host:port`, `[v6]`, `[v6]:port` — as an HTTP `Host` header, a gRPC
// `:authority`, the host of an `Origin` and an `http.allowed_hosts` entry spell it. One parser for all of them, so
// what config validation accepts is exactly what the edge's Host guard compares.
import net from 'node:net';

export interface HostAuthority {
  /** Lower case; IPv6 without brackets; a trailing dot removed. */
  readonly name: string;
  /** Undefined when the authority gave none. */
  readonly port: number | undefined;
}

/** DNS labels (letters, digits, '-'), dot-separated; IPv4 literals match too. */
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*$/;

/** Name and port of an authority; undefined when malformed (userinfo, a path, spaces, a port out of 1-65535). */
export function parseHostAuthority(value: string): HostAuthority | undefined {
  const text = value.trim().toLowerCase();
  if (text.length > 300) return undefined;
  let name: string;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    name = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return undefined;
    portText = rest === '' ? undefined : rest.slice(1);
    if (!net.isIPv6(name)) return undefined;
  } else {
    const colon = text.indexOf(':');
    if (colon >= 0 && text.lastIndexOf(':') !== colon) return undefined; // an IPv6 literal without brackets
    name = colon >= 0 ? text.slice(0, colon) : text;
    portText = colon >= 0 ? text.slice(colon + 1) : undefined;
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (!NAME.test(name)) return undefined;
  }
  if (portText === undefined) return { name, port: undefined };
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  return port > 0 && port <= 65_535 ? { name, port } : undefined;
}

export function isHostAuthority(value: string): boolean {
  return parseHostAuthority(value) !== undefined;
}
