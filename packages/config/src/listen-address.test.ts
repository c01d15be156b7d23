import { describe, expect, it } from '@jest/globals';
import { parseListenAddress } from './listen-address.js';

describe('parseListenAddress', () => {
  it('splits host and port, unbracketing IPv6', () => {
    expect(parseListenAddress('127.0.0.1:19090')).toEqual({ host: '127.0.0.1', port: 19090 });
    expect(parseListenAddress('edge.example.com:0')).toEqual({ host: 'edge.example.com', port: 0 });
    expect(parseListenAddress('[::1]:18081')).toEqual({ host: '::1', port: 18081 });
    expect(parseListenAddress('[::]:65535')).toEqual({ host: '::', port: 65535 });
  });

  it('reads an empty host as every interface', () => {
    expect(parseListenAddress(':9000')).toEqual({ host: '0.0.0.0', port: 9000 });
  });

  it.each(['', '19093', 'host:', 'host:65536', '::1:80', 'a b:1', ' 127.0.0.1:80', 'http://h:80'])(
    'rejects %j',
    (value) => {
      expect(parseListenAddress(value)).toBeUndefined();
    },
  );
});
