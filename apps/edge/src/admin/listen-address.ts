// Parsing of `host:port` listen addresses (IPv6 in brackets) and the loopback test that decides whether the
// admin API may run without a token.
import { isIP } from 'node:net';
import { AdminError } from './errors.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export function parseListenAddress(value: string): ListenAddress {
  const match = /^(?:\[([^\]\s]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || !Number.isInteger(port) || port > 65535) {
    throw new AdminError('invalid_listen', `invalid listen address "${value}": expected host:port`);
  }
  return { host, port };
}

/** The address in the form grpc-js binds and dials (IPv6 hosts in brackets). */
export function formatListenAddress({ host, port }: ListenAddress): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** localhost, 127.0.0.0/8, ::1 and IPv4-mapped 127.x. Wildcards (0.0.0.0, ::) are not loopback. */
export function isLoopbackHost(host: string): boolean {
  const normalized = host.toLowerCase();
  if (normalized === 'localhost' || normalized === '::1') return true;
  const ipv4 = normalized.startsWith('::ffff:') ? normalized.slice('::ffff:'.length) : normalized;
  return isIP(ipv4) === 4 && ipv4.startsWith('127.');
}
