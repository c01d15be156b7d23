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
