// Parses a `host:port` listen setting (`[::1]:8080` for IPv6) into what net.Server.listen takes.

export interface ListenAddress {
  host: string;
  port: number;
}

export function parseListenAddress(value: string): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port > 65535) {
    throw new RangeError(`invalid listen address '${value}': expected host:port`);
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** A URL clients on this host can use for a bound address (wildcards become loopback). */
export function localUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
