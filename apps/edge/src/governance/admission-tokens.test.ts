import { describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import { admissionTokens, answerTokens } from './admission-tokens.js';

const limits = { requested: undefined, modelDefault: undefined, modelMinimum: undefined, fallback: 1024 };

describe('admission tokens', () => {
  it("takes the request's max_tokens, else the model's default_max_tokens, else the configured fallback", () => {
    expect(answerTokens({ ...limits, requested: 20, modelDefault: 500 })).toBe(20);
    expect(answerTokens({ ...limits, modelDefault: 500 })).toBe(500);
    expect(answerTokens({ ...limits, modelDefault: null })).toBe(1024);
    expect(answerTokens({ ...limits, fallback: 0 })).toBe(0);
  });

  it("raises a smaller request to the model's min_max_tokens, as the generation policy will", () => {
    expect(answerTokens({ ...limits, requested: 8, modelMinimum: 64 })).toBe(64);
    expect(answerTokens({ ...limits, requested: 100, modelMinimum: 64 })).toBe(100);
  });

  it("adds the prompt's estimate (four characters a token)", () => {
    const messages = [create.chatMessage({ role: 'user', content: 'x'.repeat(40) })];
    expect(admissionTokens(messages, { ...limits, requested: 20 })).toBe(30);
  });
});
