import { describe, expect, it } from '@jest/globals';
import {
  boundAddress,
  formatHostPort,
  isLoopbackHost,
  localUrl,
  parseListenAddress,
  reachableHost,
} from './listen-address.js';

class CustomError extends Error {
  readonly code = 'custom';
}

describe('listen addresses', () => {
  it('parses host:port with IPv4, names, bracketed IPv6 and an empty host', () => {
    expect(parseListenAddress('127.0.0.1:19093')).toEqual({ host: '127.0.0.1', port: 19093 });
    expect(parseListenAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
    expect(parseListenAddress('[::1]:19093')).toEqual({ host: '::1', port: 19093 });
    expect(parseListenAddress(' :9000 ')).toEqual({ host: '0.0.0.0', port: 9000 });
  });

  it('rejects malformed addresses with a RangeError, or the error the caller builds', () => {
    for (const bad of ['', '19093', 'host:', 'host:99999', '::1:80', 'a b:1', 'localhost']) {
      expect(() => parseListenAddress(bad)).toThrow(RangeError);
      expect(() => parseListenAddress(bad)).toThrow(`invalid listen address "${bad}": expected host:port`);
      expect(() => parseListenAddress(bad, (message) => new CustomError(message))).toThrow(CustomError);
    }
  });

  it('formats hosts for bind and dial, bracketing IPv6', () => {
    expect(formatHostPort('::1', 5)).toBe('[::1]:5');
    expect(formatHostPort('127.0.0.1', 5)).toBe('127.0.0.1:5');
    expect(boundAddress({ address: '::', family: 'IPv6', port: 41000 })).toBe('[::]:41000');
    expect(boundAddress('/tmp/edge.sock')).toBe('/tmp/edge.sock');
    expect(boundAddress(null)).toBe('unbound');
  });

  it('dials wildcard listeners on loopback', () => {
    expect(reachableHost('0.0.0.0')).toBe('127.0.0.1');
    expect(reachableHost('::')).toBe('::1');
    expect(reachableHost('10.0.0.2')).toBe('10.0.0.2');
    expect(localUrl('0.0.0.0', 18081)).toBe('http://127.0.0.1:18081');
    expect(localUrl('::', 80)).toBe('http://[::1]:80');
    expect(localUrl('edge.local', 80)).toBe('http://edge.local:80');
  });

  it('treats only loopback hosts as loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '128.0.0.1']) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });
});
