// Which IP addresses a request made on a caller's behalf may reach (the node's image fetches, the edge's A2A push
// notifications): globally routable unicast only — never loopback, private, carrier-grade NAT, link-local (cloud
// metadata at 169.254.169.254), documentation, multicast or reserved ranges, IPv4 embedded in IPv6 included —
// widened by networks an operator names. Pure classification: resolving names and connecting is the caller's job.
import { BlockList, isIP } from 'node:net';

/** Whether a request may connect to `address` (an IPv4 or IPv6 literal). */
export type AddressCheck = (address: string, family: 4 | 6) => boolean;

const NON_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const)
  NON_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const)
  NON_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** An IPv4 address embedded in an IPv6 one (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96). */
function embeddedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = parseInt(hex[1] ?? '0', 16);
  const low = parseInt(hex[2] ?? '0', 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** True for a globally routable unicast address: the default address check. */
export function isPublicAddress(address: string, family: 4 | 6): boolean {
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    if (v4 !== undefined) return !NON_PUBLIC.check(v4, 'ipv4');
    return !NON_PUBLIC.check(address, 'ipv6');
  }
  return !NON_PUBLIC.check(address, 'ipv4');
}

/**
 * The default check widened by operator-named networks (`--image-fetch-allow`, e.g. an internal image server):
 * an address is allowed when it is public or inside one of `cidrs` ("10.1.2.0/24", "127.0.0.1", "fd00::/8").
 * Throws RangeError for a malformed entry.
 */
export function allowListCheck(cidrs: readonly string[]): AddressCheck {
  const allowed = new BlockList();
  for (const entry of cidrs) {
    const [net = '', prefixText] = entry.trim().split('/');
    const family = isIP(net);
    const prefix = prefixText === undefined ? (family === 6 ? 128 : 32) : Number(prefixText);
    if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32))
      throw new RangeError(`'${entry}' is not an IP address or CIDR network`);
    allowed.addSubnet(net, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return (address, family) =>
    isPublicAddress(address, family) || allowed.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
