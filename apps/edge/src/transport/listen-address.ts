// host:port strings of listeners ("0.0.0.0:19090", "[::1]:19090") ⇄ { host, port }.
import type { AddressInfo } from 'node:net';
import { TransportError } from './errors.js';

export interface HostPort {
  host: string;
  port: number;
}

export function parseListenAddress(value: string): HostPort {
  const separator = value.lastIndexOf(':');
  if (separator <= 0)
    throw new TransportError('invalid_address', `listen address '${value}' must be host:port`);
  let host = value.slice(0, separator);
  const portText = value.slice(separator + 1);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TransportError('invalid_address', `listen address '${value}' has an invalid port`);
  }
  return { host, port };
}

export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The address a server actually bound (port 0 resolved). */
export function boundAddress(address: AddressInfo | string | null): string {
  if (address === null) return 'unbound';
  if (typeof address === 'string') return address;
  return formatHostPort(address.address, address.port);
}
