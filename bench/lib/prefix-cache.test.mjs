// Unit tests of the prefix-cache model (node --test bench/lib/).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MESSAGE_OVERHEAD_TOKENS,
  PrefixCache,
  messageText,
  messageTokens,
  prefixHashes,
} from './prefix-cache.mjs';

const system = { role: 'system', content: 'x'.repeat(400) }; // 100 + 4 tokens
const user = (text) => ({ role: 'user', content: text });
const assistant = (text) => ({ role: 'assistant', content: text });

describe('prefix cache model', () => {
  it('counts a token per 4 bytes of text plus the template overhead, string or text parts alike', () => {
    assert.equal(messageTokens(system), 100 + MESSAGE_OVERHEAD_TOKENS);
    assert.equal(messageTokens(user('abcde')), 2 + MESSAGE_OVERHEAD_TOKENS);
    const parts = {
      role: 'user',
      content: [{ type: 'text', text: 'ab' }, { type: 'image_url' }, { type: 'text', text: 'cde' }],
    };
    assert.equal(messageText(parts), 'abcde');
    assert.deepEqual(prefixHashes([parts]), prefixHashes([user('abcde')]));
    assert.equal(messageTokens({ role: 'assistant', content: null }), MESSAGE_OVERHEAD_TOKENS);
  });

  it('identifies a prefix by every message before it: the same message after a different history is unseen', () => {
    const [a] = prefixHashes([user('one')]);
    const [, b] = prefixHashes([user('zero'), user('one')]);
    assert.notEqual(a, b);
    assert.notDeepEqual(prefixHashes([user('a')]), prefixHashes([assistant('a')]));
  });

  it('a cold prompt is all unseen; the next turn of the conversation only pays for what it appended', () => {
    const cache = new PrefixCache({ capacityTokens: 10_000 });
    const turn1 = [system, user('task '.repeat(40))];
    const cold = cache.lookup(turn1);
    assert.equal(cold.cachedMessages, 0);
    assert.equal(cold.unseenTokens, cold.totalTokens);
    cache.insert([...turn1, assistant('answer one')]);
    const turn2 = [...turn1, assistant('answer one'), user('tool output')];
    const warm = cache.lookup(turn2);
    assert.equal(warm.cachedMessages, 3);
    assert.equal(warm.unseenTokens, messageTokens(user('tool output')));
    assert.equal(
      warm.totalTokens,
      turn2.map(messageTokens).reduce((sum, value) => sum + value, 0),
    );
  });

  it('shares a common head between conversations and stops at the first message it has not seen', () => {
    const cache = new PrefixCache({ capacityTokens: 10_000 });
    cache.insert([system, user('conversation A')]);
    const other = cache.lookup([system, user('conversation B'), assistant('x'), user('y')]);
    assert.equal(other.cachedMessages, 1);
    assert.equal(other.cachedTokens, messageTokens(system));
    // A later message that was seen after a different history does not count either.
    cache.insert([system, user('conversation C'), user('y')]);
    assert.equal(cache.lookup([system, user('conversation D'), user('y')]).cachedMessages, 1);
  });

  it('stays within its token capacity, evicting the least recently used prefix tails first', () => {
    const cache = new PrefixCache({ capacityTokens: 300 });
    const headA = [system, user('a'.repeat(200))]; // 104 + 54
    cache.insert(headA);
    const headB = [system, user('b'.repeat(200))];
    cache.insert(headB); // system shared: 104 + 54 + 54 = 212
    assert.equal(cache.tokens, 212);
    // 212 + 104 > 300: the least recently used entry goes, and that is A's tail (B touched the shared system
    // prompt after A's tail was used), not the system prompt both share.
    cache.insert([system, user('c'.repeat(400))]);
    assert.ok(cache.tokens <= 300, `cache holds ${cache.tokens} tokens`);
    assert.equal(cache.evictedTokens, 54);
    assert.equal(cache.lookup(headA).cachedMessages, 1);
    assert.equal(cache.lookup(headB).cachedMessages, 2);
  });

  it('keeps the head of a prompt larger than the whole cache and drops its tail', () => {
    const cache = new PrefixCache({ capacityTokens: 150 });
    const prompt = [system, user('z'.repeat(400))]; // 104 + 104
    cache.insert(prompt);
    assert.equal(cache.tokens, 104);
    assert.equal(cache.lookup(prompt).cachedMessages, 1);
  });

  it('refuses a capacity that is not a positive integer', () => {
    assert.throws(() => new PrefixCache({ capacityTokens: 0 }), RangeError);
    assert.throws(() => new PrefixCache({ capacityTokens: 1.5 }), RangeError);
  });
});
