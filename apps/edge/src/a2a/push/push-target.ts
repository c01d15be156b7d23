// Which webhook URLs the edge POSTs notifications to. A URL comes from an A2A client, so it is checked like the
// node's image fetches: http or https, no credentials in the URL, and the host name resolved with every address
// it resolves to public (@iop/config isPublicAddress: no loopback, private, link-local or metadata ranges) —
// unless the host is named in `a2a.push.allow_hosts` (an internal service the operator trusts). The address that
// was checked is the one the sender connects to (push-sender.ts pins it), so a DNS answer that changes between
// check and connect cannot reach an unchecked address. Checked when a config is set (a refusal is the client's
// JSON-RPC error) and again before every attempt.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { isPublicAddress, parseHostAuthority, type AddressCheck } from '@iop/config';

export type PushTargetRefusal = 'invalid_url' | 'blocked_address' | 'dns_failed';

export class PushTargetError extends Error {
  override readonly name = 'PushTargetError';
  readonly code = 'push_target_refused';
  constructor(
    readonly reason: PushTargetRefusal,
    message: string,
  ) {
    super(message);
  }
}

/** Resolves a host name to every address it has. */
export type PushResolver = (hostname: string) => Promise<LookupAddress[]>;

export interface PushTargetPolicy {
  /** `a2a.push.allow_hosts`: `host` or `host:port` entries exempt from the address check. */
  allowHosts: readonly string[];
  /** Default isPublicAddress. */
  allowAddress?: AddressCheck;
  /** Default: the system resolver (getaddrinfo, every address). */
  resolve?: PushResolver;
}

/** A URL that passed the check, and the address to connect to (undefined: an allowed host, resolved as usual). */
export interface CheckedPushTarget {
  url: URL;
  address: LookupAddress | undefined;
}

export type PushTargetCheck = (rawUrl: string) => Promise<CheckedPushTarget>;

const systemResolve: PushResolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses);
    });
  });

export function createPushTargetCheck(policy: PushTargetPolicy): PushTargetCheck {
  const allowAddress = policy.allowAddress ?? isPublicAddress;
  const resolve = policy.resolve ?? systemResolve;
  const allowed = policy.allowHosts.map((entry) => {
    const parsed = parseHostAuthority(entry);
    if (!parsed) throw new RangeError(`'${entry}' is not a host or host:port`);
    return parsed;
  });
  return async (rawUrl) => {
    const url = parseUrl(rawUrl);
    const hostname = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const shown = `${url.protocol}//${url.host}`;
    if (
      allowed.some((entry) => entry.name === hostname && (entry.port === undefined || entry.port === port))
    ) {
      return { url, address: undefined };
    }
    const literal = isIP(hostname);
    let addresses: LookupAddress[];
    if (literal !== 0) addresses = [{ address: hostname, family: literal }];
    else {
      try {
        addresses = await resolve(hostname);
      } catch {
        addresses = [];
      }
      if (addresses.length === 0)
        throw new PushTargetError('dns_failed', `the webhook host of ${shown} does not resolve`);
    }
    // Every address is checked: a name with one public and one private address is refused as a whole.
    for (const entry of addresses) {
      if (!allowAddress(entry.address, entry.family === 6 ? 6 : 4)) {
        throw new PushTargetError(
          'blocked_address',
          `the webhook host of ${shown} resolves to ${entry.address}, a loopback, private, link-local or ` +
            'otherwise non-public address; name the host in a2a.push.allow_hosts to allow it',
        );
      }
    }
    return { url, address: addresses[0] };
  };
}

function parseUrl(rawUrl: string): URL {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new PushTargetError('invalid_url', 'the webhook url is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new PushTargetError('invalid_url', `webhook urls are http or https, not ${url.protocol}`);
  if (url.username !== '' || url.password !== '')
    throw new PushTargetError(
      'invalid_url',
      'a webhook url must not carry credentials; use token or authentication',
    );
  return url;
}
