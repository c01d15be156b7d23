// The node-transport address nodes are told to dial (node register, install scripts): edge.listen, with a
// wildcard host replaced by something a remote node can reach.
import type os from 'node:os';
import type { EdgeConfig } from '@iop/config';
import { formatHostPort, parseListenAddress } from '../net/listen-address.js';

/**
 * The address a node should dial: bootstrap.edge_address when set (NAT, port forward, relay), else edge.listen,
 * except that a wildcard host (0.0.0.0, ::) is replaced by the host of bootstrap.public_url when set, else by this
 * machine's first non-internal IPv4 address.
 */
export function nodeFacingAddress(
  config: EdgeConfig,
  networkInterfaces: () => ReturnType<typeof os.networkInterfaces>,
): string {
  if (config.bootstrap.edge_address) return config.bootstrap.edge_address;
  const { host, port } = parseListenAddress(config.edge.listen);
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return formatHostPort(host, port);
  if (config.bootstrap.public_url) {
    try {
      const publicHost = new URL(config.bootstrap.public_url).hostname.replace(/^\[|\]$/g, '');
      if (publicHost) return formatHostPort(publicHost, port);
    } catch {
      // an unparsable public_url falls through to the interface lookup
    }
  }
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (entry.family === 'IPv4' && !entry.internal) return formatHostPort(entry.address, port);
    }
  }
  return formatHostPort('127.0.0.1', port);
}
