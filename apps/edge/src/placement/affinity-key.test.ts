import { describe, expect, it } from '@jest/globals';
import { create, RunKind, type ChatMessage } from '@iop/wire';
import { affinityKeyFor, conversationHead } from './affinity-key.js';

const ON = { enabled: true, hash_messages: true, max_wait_ms: 0 };
const message = (role: string, content: string): ChatMessage => create.chatMessage({ role, content });

/** An agent loop: every turn re-sends the whole conversation plus what happened since. */
function turn(n: number): ChatMessage[] {
  const messages = [message('system', 'You are a coding agent.'), message('user', 'Fix the failing test')];
  for (let index = 0; index < n; index += 1) {
    messages.push(message('assistant', `step ${index}`), message('tool', `result ${index}`));
  }
  return messages;
}

describe('affinityKeyFor', () => {
  it('hashes the same head for every turn of one conversation', () => {
    const first = affinityKeyFor({ messages: turn(0) }, 'team-a', ON);
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    for (const n of [1, 2, 7]) expect(affinityKeyFor({ messages: turn(n) }, 'team-a', ON)).toBe(first);
  });

  it('tells conversations apart by their system prompt and first user message', () => {
    const base = affinityKeyFor({ messages: turn(0) }, 'team-a', ON);
    const otherTask = [message('system', 'You are a coding agent.'), message('user', 'Write the docs')];
    const otherPrompt = [message('system', 'You are a reviewer.'), message('user', 'Fix the failing test')];
    const withImage = [
      message('system', 'You are a coding agent.'),
      create.chatMessage({ role: 'user', content: 'Fix the failing test', images: ['aGk='] }),
    ];
    const keys = [otherTask, otherPrompt, withImage].map((messages) =>
      affinityKeyFor({ messages }, 'team-a', ON),
    );
    expect(new Set([base, ...keys]).size).toBe(4);
  });

  it('derives a key from the spec, the principal and the setting alone (the same inputs, the same key)', () => {
    const spec = { messages: turn(0) };
    const first = affinityKeyFor(spec, 'team-a', ON);
    expect(affinityKeyFor(spec, 'team-a', ON)).toBe(first);
    expect(affinityKeyFor(spec, 'team-b', ON)).toBe(affinityKeyFor({ messages: turn(0) }, 'team-b', ON));
    expect(affinityKeyFor(spec, 'team-b', ON)).not.toBe(first);
    expect(affinityKeyFor(spec, 'team-a', { ...ON, hash_messages: false })).toBeUndefined();
    expect(affinityKeyFor(spec, 'team-a', ON)).toBe(first);
  });

  it('scopes every key by principal: two keys never share an entry', () => {
    expect(affinityKeyFor({ messages: turn(0) }, 'team-a', ON)).not.toBe(
      affinityKeyFor({ messages: turn(0) }, 'team-b', ON),
    );
    expect(affinityKeyFor({ messages: turn(0), affinityKey: 'conv-1' }, 'team-a', ON)).not.toBe(
      affinityKeyFor({ messages: turn(0), affinityKey: 'conv-1' }, 'team-b', ON),
    );
    expect(affinityKeyFor({ messages: turn(0), affinityKey: 'conv-1' }, undefined, ON)).not.toBe(
      affinityKeyFor({ messages: turn(0), affinityKey: 'conv-1' }, 'team-a', ON),
    );
  });

  it('prefers an explicit key over the head, and keeps explicit and hashed keys apart', () => {
    const explicit = affinityKeyFor({ messages: turn(0), affinityKey: 'conv-1' }, 'k', ON);
    expect(affinityKeyFor({ messages: turn(3), affinityKey: 'conv-1' }, 'k', ON)).toBe(explicit);
    expect(affinityKeyFor({ messages: [message('user', 'other')], affinityKey: 'conv-1' }, 'k', ON)).toBe(
      explicit,
    );
    expect(explicit).not.toBe(affinityKeyFor({ messages: turn(0) }, 'k', ON));
  });

  it('has no key when the model turns affinity or head hashing off, or the run is no chat', () => {
    expect(
      affinityKeyFor({ messages: turn(0), affinityKey: 'c' }, 'k', { ...ON, enabled: false }),
    ).toBeUndefined();
    expect(affinityKeyFor({ messages: turn(0) }, 'k', { ...ON, hash_messages: false })).toBeUndefined();
    expect(
      affinityKeyFor({ messages: turn(0), affinityKey: 'c' }, 'k', { ...ON, hash_messages: false }),
    ).toMatch(/^[0-9a-f]{32}$/);
    expect(affinityKeyFor({ messages: [], kind: RunKind.RUN_KIND_EMBEDDING }, 'k', ON)).toBeUndefined();
    expect(affinityKeyFor({ messages: [message('assistant', 'hi')] }, 'k', ON)).toBeUndefined();
  });
});

describe('conversationHead', () => {
  it('is the leading system/developer messages and the first user message', () => {
    const messages = [
      message('system', 's'),
      message('developer', 'd'),
      message('user', 'u1'),
      message('assistant', 'a'),
      message('user', 'u2'),
    ];
    expect(conversationHead(messages)?.map((entry) => entry.content)).toEqual(['s', 'd', 'u1']);
    expect(conversationHead([message('system', 's')])).toBeUndefined();
  });
});
