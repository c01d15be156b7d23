import { describe, expect, it } from '@jest/globals';
import { isListenAddress } from './listen-address.js';
import { isHttpUrl } from './validate-structure.js';

describe('address formats', () => {
  it.each([
    ['0.0.0.0:19090', true],
    ['127.0.0.1:0', true],
    [':8080', true],
    ['edge.example.com:65535', true],
    ['[::1]:18081', true],
    ['[::]:1', true],
    ['127.0.0.1:65536', false],
    ['127.0.0.1', false],
    ['127.0.0.1:', false],
    ['::1:80', false],
    ['host name:80', false],
    ['http://h:80', false],
  ])('isListenAddress(%j) is %s', (value, expected) => {
    expect(isListenAddress(value)).toBe(expected);
  });

  it.each([
    ['http://127.0.0.1:11434', true],
    ['https://edge.example.com/v1', true],
    ['http://[2001:db8::1]:8000/v1', true],
    ['ftp://h', false],
    ['127.0.0.1:11434', false],
    ['http://', false],
    ['', false],
  ])('isHttpUrl(%j) is %s', (value, expected) => {
    expect(isHttpUrl(value)).toBe(expected);
  });
});
