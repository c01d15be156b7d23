import { describe, expect, it } from '@jest/globals';
import { formatListenAddress, isLoopbackHost, parseListenAddress } from './listen-address.js';

describe('listen addresses', () => {
  it('parses host:port with IPv4, names and bracketed IPv6', () => {
    expect(parseListenAddress('127.0.0.1:19093')).toEqual({ host: '127.0.0.1', port: 19093 });
    expect(parseListenAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
    expect(parseListenAddress('[::1]:19093')).toEqual({ host: '::1', port: 19093 });
    expect(formatListenAddress({ host: '::1', port: 5 })).toBe('[::1]:5');
    expect(formatListenAddress({ host: '127.0.0.1', port: 5 })).toBe('127.0.0.1:5');
  });

  it('rejects malformed addresses', () => {
    for (const bad of ['', '19093', 'host:', 'host:99999', '::1:80', 'a b:1']) {
      expect(() => parseListenAddress(bad)).toThrow(/invalid listen address/);
    }
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
