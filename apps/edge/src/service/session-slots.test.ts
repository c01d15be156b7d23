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

  it('forgets a target once all its slots are free', () => {
    const slots = new SessionSlots();
    const only = slots.acquire('', 'ollama', 'llama3', 's');
    only.release();
    expect(slots.held).toBe(0);
    expect(slots.acquire('', 'ollama', 'llama3', 's').sessionId).toBe('s');
  });
});
