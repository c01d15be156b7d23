import { describe, expect, it } from '@jest/globals';
import { allowListCheck, isPublicAddress } from './public-address.js';

describe('isPublicAddress', () => {
  it.each([
    ['127.0.0.1', 4],
    ['10.1.2.3', 4],
    ['172.20.0.1', 4],
    ['192.168.1.1', 4],
    ['169.254.169.254', 4],
    ['100.64.0.1', 4],
    ['0.0.0.0', 4],
    ['224.0.0.1', 4],
    ['255.255.255.255', 4],
    ['::1', 6],
    ['::', 6],
    ['fe80::1', 6],
    ['fd00::1', 6],
    ['ff02::1', 6],
    ['::ffff:127.0.0.1', 6],
    ['::ffff:7f00:1', 6],
    ['::ffff:a9fe:a9fe', 6],
  ] as const)('refuses %s', (address, family) => {
    expect(isPublicAddress(address, family)).toBe(false);
  });

  it.each([
    ['93.184.216.34', 4],
    ['8.8.8.8', 4],
    ['2606:4700:4700::1111', 6],
    ['::ffff:8.8.8.8', 6],
  ] as const)('allows %s', (address, family) => {
    expect(isPublicAddress(address, family)).toBe(true);
  });
});

describe('allowListCheck', () => {
  it('allows public addresses and the named networks, nothing else private', () => {
    const check = allowListCheck(['127.0.0.1', '10.1.2.0/24', 'fd00::/8']);
    expect(check('127.0.0.1', 4)).toBe(true);
    expect(check('127.0.0.2', 4)).toBe(false);
    expect(check('10.1.2.200', 4)).toBe(true);
    expect(check('10.1.3.1', 4)).toBe(false);
    expect(check('fd00::5', 6)).toBe(true);
    expect(check('::1', 6)).toBe(false);
    expect(check('8.8.8.8', 4)).toBe(true);
  });

  it.each(['localhost', '10.0.0.0/33', '10.0.0.0/x', ''])('refuses the entry %j', (entry) => {
    expect(() => allowListCheck([entry])).toThrow(RangeError);
  });
});
