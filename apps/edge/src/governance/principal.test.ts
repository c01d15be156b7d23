import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { estimateTokens } from './estimate-tokens.js';
import { allowsModel, createPrincipalResolver, principalOf, unlimitedPrincipal } from './principal.js';

const sha = (value: string) => createHash('sha256').update(value).digest('hex');
const key = (id: string, secret: string, models: string[] = []) => ({
  id,
  key: '',
  key_sha256: sha(secret),
  models,
  rpm: null,
  tpm: null,
  max_concurrent: null,
  token_budget: null,
  weight: 1,
  priority: 'interactive' as const,
});

describe('principal resolution', () => {
  const resolver = createPrincipalResolver({
    keys: [key('a', 'sk-a', ['m1']), key('b', 'sk-b')],
    extra: [{ secret: 'bearer', principal: unlimitedPrincipal('a2a-bearer-token') }],
  });

  it('resolves a bearer key to its principal by digest, case-insensitive scheme, trimmed', () => {
    expect(resolver.authenticate('Bearer sk-a')).toMatchObject({ kind: 'accepted', principal: { id: 'a' } });
    expect(resolver.authenticate('  bearer sk-b ')).toMatchObject({
      kind: 'accepted',
      principal: { id: 'b' },
    });
    expect(resolver.authenticate('Bearer bearer')).toMatchObject({
      kind: 'accepted',
      principal: { id: 'a2a-bearer-token' },
    });
  });

  it('tells a missing key from a wrong one', () => {
    expect(resolver.authenticate(undefined)).toEqual({ kind: 'missing' });
    expect(resolver.authenticate('Basic abc')).toEqual({ kind: 'missing' });
    expect(resolver.authenticate('Bearer sk-c')).toEqual({ kind: 'invalid' });
  });

  it('is open without keys, and an empty extra secret does not count as a key', () => {
    const open = createPrincipalResolver({
      keys: [],
      extra: [{ secret: '', principal: unlimitedPrincipal('x') }],
    });
    expect(open.required).toBe(false);
    expect(open.authenticate(undefined)).toEqual({ kind: 'open' });
  });

  it('looks a principal up by id among the keys in force, the A2A bearer principal included', () => {
    expect(resolver.byId('a')).toMatchObject({
      kind: 'found',
      principal: { id: 'a', models: new Set(['m1']) },
    });
    expect(resolver.byId('a2a-bearer-token')).toMatchObject({
      kind: 'found',
      principal: { id: 'a2a-bearer-token' },
    });
    expect(resolver.byId('gone')).toEqual({ kind: 'unknown' });
    expect(resolver.byId('')).toEqual({ kind: 'unknown' });
    const withoutBearer = createPrincipalResolver({ keys: [key('a', 'sk-a')] });
    expect(withoutBearer.byId('a2a-bearer-token')).toEqual({ kind: 'unknown' });
    expect(createPrincipalResolver({ keys: [] }).byId('a')).toEqual({ kind: 'open' });
  });

  it('applies the model allow-list; an empty list allows every model', () => {
    expect(allowsModel(principalOf(key('a', 's', ['m1'])), 'm1')).toBe(true);
    expect(allowsModel(principalOf(key('a', 's', ['m1'])), 'm2')).toBe(false);
    expect(allowsModel(principalOf(key('b', 's')), 'anything')).toBe(true);
  });
});

describe('estimateTokens', () => {
  it('counts about one token per four characters, and a flat amount per image', () => {
    const messages = [
      create.chatMessage({ role: 'system', content: 'x'.repeat(10) }),
      create.chatMessage({ role: 'user', content: 'y'.repeat(6), images: ['aGk='] }),
    ];
    expect(estimateTokens(messages)).toBe(4 + 256);
    expect(estimateTokens([])).toBe(0);
  });
});
