// The Host / Origin guard in front of every edge listener (OpenAI, A2A, dashboard, bootstrap, metrics, and the
// admin API's `:authority`). A loopback port is not a door: a web page an operator visits can make the browser
// connect to 127.0.0.1 under a name the attacker controls (DNS rebinding), or post to it from another origin.
// Both are visible in the request: the rebinding page's `Host` is the attacker's name, the foreign page's `Origin`
// is its own site. So a request is served only when its Host names this listener — one of its own addresses with
// its port, the loopback forms for a connection that arrived on loopback, or a name the operator declared (public
// URLs, `http.allowed_hosts` for reverse proxies) — and a browser's Origin, when present, names one of those too.
// Anything else is refused (421 for the Host, 403 for the Origin) before the handler runs: no body is read, no
// token checked, no work started.
//
// A verdict depends only on the guard's configuration, the connection's local endpoint and the two headers (the
// guard remembers accepted combinations, nothing else). One is built per listener with what that listener is (its
// listen address, TLS or not, its declared names) and it reads the connection's local address and port, so
// wildcard listeners (0.0.0.0, ::) accept the interface address a client actually dialed and port 0 needs no
// second step.
import net from 'node:net';
import os from 'node:os';
import type http from 'node:http';
import { parseHostAuthority as parseAuthority } from '@iop/config';
import { isLoopbackHost, parseListenAddress } from '../net/listen-address.js';
import { modelCallOf } from './model-call-socket.js';

export type HostGuardCode = 'host_not_allowed' | 'origin_not_allowed';

/** A refused request: the status it gets and why (never echoes more than the offending header). */
export interface HostRefusal {
  readonly status: 421 | 403;
  readonly code: HostGuardCode;
  readonly message: string;
}

/** Where a connection arrived: the socket's local address (undefined when unknown, e.g. gRPC) and port. */
export interface LocalEndpoint {
  readonly address?: string;
  readonly port: number;
}

export type NetworkInterfaces = () => NodeJS.Dict<os.NetworkInterfaceInfo[]>;

export interface HostGuardOptions {
  /** The listener's configured `host:port` (a wildcard host or port 0 are fine: the socket tells the rest). */
  listen: string;
  /**
   * Names the operator declared for this listener: `host` (any port: a reverse proxy's public name) or
   * `host:port` (that port only), IPv6 in brackets. Public URLs are passed as their `host[:port]`.
   */
  names?: readonly string[];
  /** A TLS listener: a Host without a port means 443 (else 80). */
  secure?: boolean;
  /** This machine's name, accepted on a wildcard listener. Default `os.hostname()`. */
  hostname?: string;
  /** Interface addresses, for a wildcard listener when the local address is unknown (gRPC). */
  interfaces?: NetworkInterfaces;
}

export interface HostGuard {
  /** Checks a `Host` header or gRPC `:authority` for a connection that arrived on `local`. */
  checkHost(authority: string | undefined, local: LocalEndpoint): HostRefusal | undefined;
  /** Checks a browser's `Origin` header against the same allow-list (absent = not a browser: allowed). */
  checkOrigin(origin: string | undefined, local: LocalEndpoint): HostRefusal | undefined;
  /** Host, then Origin, of an HTTP request (its socket is the local endpoint). */
  checkRequest(request: http.IncomingMessage): HostRefusal | undefined;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1']);

/** Accepted (local endpoint, Host, Origin) combinations a guard remembers across connections. */
const MAX_REMEMBERED_VERDICTS = 256;

/**
 * The host of a public URL for `names`, any port (behind a proxy the listener's port differs from the URL's). None
 * for empty text, an unparsable URL or a host no Host header could match (e.g. an underscore the URL parser
 * allows): such a URL simply declares nothing.
 */
export function urlAuthority(url: string): string[] {
  if (url === '') return [];
  try {
    const { hostname } = new URL(url);
    return hostname !== '' && parseAuthority(hostname) ? [hostname] : [];
  } catch {
    return [];
  }
}

export function createHostGuard(options: HostGuardOptions): HostGuard {
  const listen = parseListenAddress(options.listen);
  const listenHost = normalizeAddress(listen.host);
  const wildcard = listenHost === '0.0.0.0' || listenHost === '::';
  const loopbackListener = isLoopbackHost(listenHost);
  const hostname = (options.hostname ?? os.hostname()).toLowerCase();
  const interfaces = options.interfaces ?? (() => os.networkInterfaces());
  const declared = (options.names ?? []).map((entry) => {
    const parsed = parseAuthority(entry);
    if (!parsed) throw new RangeError(`invalid host name "${entry}": expected host or host:port`);
    return parsed;
  });
  const defaultPort = options.secure ? 443 : 80;

  /** Is `name:port` (port already defaulted) this listener, for a connection that arrived on `local`? */
  function allowed(name: string, port: number, local: LocalEndpoint): boolean {
    if (declared.some((entry) => entry.name === name && (entry.port === undefined || entry.port === port))) {
      return true;
    }
    if (port !== local.port) return false;
    const localAddress = local.address === undefined ? undefined : normalizeAddress(local.address);
    // Unknown (gRPC): a loopback or wildcard listener may have been reached over loopback.
    const arrivedOnLoopback = localAddress === undefined || isLoopbackHost(localAddress);
    if (LOOPBACK_NAMES.has(name) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)) {
      // Loopback forms are this listener only for a connection that came in over loopback.
      return arrivedOnLoopback && (loopbackListener || wildcard);
    }
    // The bound address itself (a wildcard one too: `0.0.0.0:<port>` is dialable here and no DNS name).
    if (name === listenHost) return true;
    if (!wildcard) return false;
    if (net.isIP(name) !== 0) {
      if (localAddress !== undefined) return name === localAddress;
      return interfaceAddresses(interfaces).has(name);
    }
    return name === hostname;
  }

  function checkHost(authority: string | undefined, local: LocalEndpoint): HostRefusal | undefined {
    if (authority === undefined || authority.trim() === '') {
      return {
        status: 421,
        code: 'host_not_allowed',
        message: 'a Host header naming this listener is required',
      };
    }
    const parsed = parseAuthority(authority);
    if (parsed && allowed(parsed.name, parsed.port ?? defaultPort, local)) return undefined;
    return {
      status: 421,
      code: 'host_not_allowed',
      message: `host ${JSON.stringify(authority.slice(0, 256))} is not an address of this listener (add it to http.allowed_hosts when a proxy or DNS name fronts it)`,
    };
  }

  function checkOrigin(origin: string | undefined, local: LocalEndpoint): HostRefusal | undefined {
    if (origin === undefined) return undefined;
    const refusal: HostRefusal = {
      status: 403,
      code: 'origin_not_allowed',
      message: `origin ${JSON.stringify(origin.slice(0, 256))} may not call this listener`,
    };
    // `null` is an opaque origin (sandboxed frame, file:, a redirect across sites): never this listener's page.
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return refusal;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.host === '') return refusal;
    const parsed = parseAuthority(url.host);
    if (!parsed) return refusal;
    const port = parsed.port ?? (url.protocol === 'https:' ? 443 : 80);
    return allowed(parsed.name, port, local) ? undefined : refusal;
  }

  // A keep-alive connection sends the same Host (and Origin) on every request, and the verdict depends only on
  // them and the connection's local endpoint: the headers last accepted on a socket are remembered, so the
  // requests after the first on a connection cost two string comparisons. Refusals are never remembered (the
  // guard closes such a connection anyway).
  const acceptedOn = new WeakMap<object, { host: string | undefined; origin: string | undefined }>();
  // The verdict is a function of the configuration (fixed for this guard), the local endpoint and the two
  // headers, so an accepted combination is also remembered across connections: a client that opens a new
  // connection (an open-loop client's pool growing in a burst, a client without keep-alive) costs one map
  // lookup instead of parsing and matching again, at the moment the edge is busiest. Bounded: only accepted
  // combinations are kept, and the map starts over when it holds MAX_REMEMBERED_VERDICTS.
  const acceptedCombinations = new Map<string, true>();

  return {
    checkHost,
    checkOrigin,
    checkRequest(request) {
      const { host, origin } = request.headers;
      const socket = request.socket;
      // An agent's model call, relayed over its node's link (model-call-socket.ts): its Host names the node's
      // loopback endpoint, and no browser can reach this in-memory connection, so neither header means anything
      // here. Only sockets the relay made are in that map; a network connection always gets the checks below.
      if (modelCallOf(socket) !== undefined) return undefined;
      const last = acceptedOn.get(socket);
      if (last !== undefined && last.host === host && last.origin === origin) return undefined;
      const local: LocalEndpoint = { address: socket.localAddress, port: socket.localPort ?? -1 };
      // \0 cannot occur in a header value or an address; an absent Origin is not the empty one.
      const key = `${local.address ?? ''}\0${local.port}\0${host ?? '\0'}\0${origin ?? '\0'}`;
      if (acceptedCombinations.has(key)) {
        acceptedOn.set(socket, { host, origin });
        return undefined;
      }
      const refusal = checkHost(host, local) ?? checkOrigin(origin, local);
      if (refusal === undefined) {
        acceptedOn.set(socket, { host, origin });
        if (acceptedCombinations.size >= MAX_REMEMBERED_VERDICTS) acceptedCombinations.clear();
        acceptedCombinations.set(key, true);
      }
      return refusal;
    },
  };
}

/**
 * Wraps a listener's request handler so a refused request is answered at once — before the handler, so before
 * any body is read or credential checked — and its connection closed (the unread body goes with it). The body is
 * `{ error: { message, type, code } }`, the OpenAI error shape, which the dashboard's `{ error: { code, message } }`
 * readers also understand.
 */
export function guardRequests(guard: HostGuard, handler: http.RequestListener): http.RequestListener {
  return (request, response) => {
    const refusal = guard.checkRequest(request);
    if (!refusal) {
      handler(request, response);
      return;
    }
    const body = JSON.stringify({
      error: { message: refusal.message, type: 'invalid_request_error', code: refusal.code },
    });
    response.shouldKeepAlive = false;
    response
      .writeHead(refusal.status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'cache-control': 'no-store',
        connection: 'close',
      })
      .end(body);
  };
}

/** IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as IPv4, brackets removed, lower case. */
function normalizeAddress(address: string): string {
  let value = address.toLowerCase();
  if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1);
  if (value.startsWith('::ffff:') && net.isIPv4(value.slice(7))) value = value.slice(7);
  return value;
}

function interfaceAddresses(interfaces: NetworkInterfaces): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(interfaces())) {
    for (const entry of list ?? []) out.add(normalizeAddress(entry.address.split('%')[0] ?? entry.address));
  }
  return out;
}
