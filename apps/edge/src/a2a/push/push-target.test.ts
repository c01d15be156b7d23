import { describe, expect, it } from '@jest/globals';
import { createPushTargetCheck, PushTargetError } from './push-target.js';

const resolveTo =
  (...addresses: string[]) =>
  () =>
    Promise.resolve(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

async function reason(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'allowed';
  } catch (error) {
    return error instanceof PushTargetError ? error.reason : String(error);
  }
}

describe('push target check', () => {
  it('allows a host whose every address is public, pinned to the checked address', async () => {
    const check = createPushTargetCheck({ allowHosts: [], resolve: resolveTo('93.184.216.34') });
    const target = await check('https://hooks.example/a2a');
    expect(target.address).toEqual({ address: '93.184.216.34', family: 4 });
  });

  it.each([
    ['http://127.0.0.1:9/x', 'blocked_address'],
    ['http://169.254.169.254/latest/meta-data', 'blocked_address'],
    ['http://[::1]/x', 'blocked_address'],
    ['ftp://hooks.example/x', 'invalid_url'],
    ['https://user:pw@hooks.example/x', 'invalid_url'],
    ['not a url', 'invalid_url'],
  ])('refuses %s (%s)', async (url, expected) => {
    const check = createPushTargetCheck({ allowHosts: [], resolve: resolveTo('93.184.216.34') });
    expect(await reason(check(url))).toBe(expected);
  });

  it('refuses a name with one private address among public ones, and a name that does not resolve', async () => {
    const mixed = createPushTargetCheck({ allowHosts: [], resolve: resolveTo('93.184.216.34', '10.0.0.5') });
    expect(await reason(mixed('https://hooks.example/'))).toBe('blocked_address');
    const none = createPushTargetCheck({
      allowHosts: [],
      resolve: () => Promise.reject(new Error('ENOTFOUND')),
    });
    expect(await reason(none('https://nowhere.example/'))).toBe('dns_failed');
  });

  it('lets a2a.push.allow_hosts name internal hosts, with or without a port', async () => {
    const check = createPushTargetCheck({
      allowHosts: ['127.0.0.1', 'hooks.internal:8443'],
      resolve: resolveTo('10.0.0.5'),
    });
    expect(await reason(check('http://127.0.0.1:4000/hook'))).toBe('allowed');
    expect(await reason(check('https://hooks.internal:8443/hook'))).toBe('allowed');
    expect(await reason(check('https://hooks.internal/hook'))).toBe('blocked_address');
    expect(() => createPushTargetCheck({ allowHosts: ['http://bad/'] })).toThrow(RangeError);
  });
});
