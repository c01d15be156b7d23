import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { DeliveredUsage } from './delivered-usage.js';

const prompt = [create.chatMessage({ role: 'user', content: 'x'.repeat(18) })];

describe('DeliveredUsage', () => {
  it("is the backend's latest usage when it reported one", () => {
    const usage = new DeliveredUsage(prompt);
    usage.observe({ type: 'text-delta', text: 'a'.repeat(400) });
    usage.observe({ type: 'usage', usage: create.usage({ promptTokens: 3, completionTokens: 7 }) });
    usage.observe({ type: 'usage', usage: create.usage({ promptTokens: 3, completionTokens: 9 }) });
    expect(usage.fromBackend).toBe(true);
    expect(usage.usage()).toEqual({ inputTokens: 3, outputTokens: 9 });
  });

  it('estimates a stream cut before the backend reported: the prompt plus the streamed text, reasoning and tool calls', () => {
    const usage = new DeliveredUsage(prompt);
    usage.observe({ type: 'start', sessionId: 's', adapter: 'a', target: 't' });
    usage.observe({ type: 'text-delta', text: 'abcdefgh' });
    usage.observe({ type: 'reasoning-delta', text: 'abcd' });
    usage.observe({
      type: 'tool-call',
      call: create.toolCall({ id: 'c', name: 'grep', argumentsJson: '{"a":1}' }),
    });
    usage.observe({ type: 'cancelled', reason: 'client-disconnected' });
    expect(usage.fromBackend).toBe(false);
    // 18 prompt characters → 5 tokens; 8 + 4 + 4 + 7 = 23 streamed characters → 6 tokens.
    expect(usage.usage()).toEqual({ inputTokens: 5, outputTokens: 6 });
  });

  it('counts nothing for a run that streamed and reported nothing', () => {
    const usage = new DeliveredUsage(prompt);
    usage.observe({ type: 'error', code: 'x', message: 'y', retryable: false, backendMs: 0 });
    expect(usage.usage()).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});
