import { describe, expect, it } from '@jest/globals';
import { SessionSlots } from './session-slots.js';

describe('SessionSlots', () => {
  it('gives concurrent runs on one target distinct sessions and reuses the lowest free one', () => {
    const slots = new SessionSlots();
    const first = slots.acquire('n', 'cli', 'codex', 'openai');
    const second = slots.acquire('n', 'cli', 'codex', 'openai');
    const third = slots.acquire('n', 'cli', 'codex', 'openai');
    expect([first.sessionId, second.sessionId, third.sessionId]).toEqual(['openai', 'openai-2', 'openai-3']);
    expect(slots.acquire('n', 'cli', 'claude', 'openai').sessionId).toBe('openai');
    second.release();
    second.release();
    expect(slots.acquire('n', 'cli', 'codex', 'openai').sessionId).toBe('openai-2');
    expect(slots.held).toBe(4);
  });

  it('always hands out the lowest free slot, whatever order slots are released in', () => {
    const slots = new SessionSlots();
    const held = new Map<number, { release(): void }>();
    const slotOf = (sessionId: string) => (sessionId === 's' ? 0 : Number(sessionId.slice(2)) - 1);
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let step = 0; step < 2000; step += 1) {
      if (held.size > 0 && random() < 0.45) {
        const keys = [...held.keys()];
        const victim = keys[Math.floor(random() * keys.length)];
        held.get(victim)?.release();
        held.delete(victim);
        continue;
      }
      const expected = [...Array(held.size + 1).keys()].find((slot) => !held.has(slot));
      const slot = slots.acquire('n', 'cli', 'codex', 's');
      expect(slotOf(slot.sessionId)).toBe(expected);
      held.set(slotOf(slot.sessionId), slot);
    }
    expect(slots.held).toBe(held.size);
  });

  it('forgets a target once all its slots are free', () => {
    const slots = new SessionSlots();
    const only = slots.acquire('', 'ollama', 'llama3', 's');
    only.release();
    expect(slots.held).toBe(0);
    expect(slots.acquire('', 'ollama', 'llama3', 's').sessionId).toBe('s');
  });

  it('keeps the slots of different base ids on one target apart', () => {
    const slots = new SessionSlots();
    const a = slots.acquire('n', 'cli', 'codex', 'ka.openai');
    const b = slots.acquire('n', 'cli', 'codex', 'kb.openai');
    expect([a.sessionId, b.sessionId]).toEqual(['ka.openai', 'kb.openai']);
    expect(slots.acquire('n', 'cli', 'codex', 'ka.openai').sessionId).toBe('ka.openai-2');
    a.release();
    expect(slots.acquire('n', 'cli', 'codex', 'ka.openai').sessionId).toBe('ka.openai');
  });
});
