import { describe, expect, it } from '@jest/globals';
import type { AdapterType } from '@iop/config';
import { refusal } from './test-support/refusal.js';
import { planRequestFields, type PlanOptions } from './request-fields.js';

function plan(body: Record<string, unknown>, backends: AdapterType[], options: Partial<PlanOptions> = {}) {
  return planRequestFields(body, {
    endpoint: 'chat',
    model: 'm',
    backends,
    dropUnsupported: false,
    ...options,
  });
}

const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

describe('planRequestFields', () => {
  it('takes the fields every backend maps, forwarding nothing', () => {
    const body = {
      ...base,
      temperature: 0.5,
      top_p: 0.9,
      seed: 7,
      stop: ['x'],
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' } } },
      max_completion_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
    };
    for (const backend of ['ollama', 'openai_compat'] as const) {
      expect(plan({ ...body }, [backend])).toEqual({ dropped: [], extraBody: undefined });
    }
  });

  it('forwards OpenAI fields without a typed form and unknown fields to OpenAI-compatible backends', () => {
    const result = plan(
      { ...base, logit_bias: { '42': -100 }, user: 'u1', top_k: 20, guided_json: { type: 'object' } },
      ['openai_compat'],
    );
    expect(result.extraBody).toEqual({
      logit_bias: { '42': -100 },
      user: 'u1',
      top_k: 20,
      guided_json: { type: 'object' },
    });
  });

  it('refuses logit_bias on Ollama with 400 unsupported_parameter naming the field and the backend', () => {
    const error = refusal(() => plan({ ...base, logit_bias: { '42': -100 } }, ['ollama']));
    expect(error.status).toBe(400);
    expect(error.code).toBe('unsupported_parameter');
    expect(error.param).toBe('logit_bias');
    expect(error.message).toContain("'logit_bias'");
    expect(error.message).toContain('Ollama');
  });

  it('refuses an unknown field on Ollama and on a CLI agent', () => {
    expect(refusal(() => plan({ ...base, top_k: 5 }, ['ollama'])).param).toBe('top_k');
    expect(refusal(() => plan({ ...base, guided_json: {} }, ['cli'])).message).toContain('CLI agent');
  });

  it('drops what a backend cannot take when the model allows it, and removes it from the body', () => {
    const body: Record<string, unknown> = { ...base, logit_bias: { '1': 1 }, top_k: 5, seed: 3 };
    const result = plan(body, ['ollama'], { dropUnsupported: true });
    expect(result.dropped).toEqual(['logit_bias', 'top_k']);
    expect(result.extraBody).toBeUndefined();
    expect(body).not.toHaveProperty('logit_bias');
    expect(body).not.toHaveProperty('top_k');
    expect(body['seed']).toBe(3);
  });

  it('accepts values that ask for nothing on every backend', () => {
    const noops = {
      ...base,
      n: 1,
      logprobs: false,
      top_logprobs: 0,
      parallel_tool_calls: true,
      store: false,
      tool_choice: 'auto',
      logit_bias: {},
      temperature: null,
    };
    for (const backend of ['ollama', 'openai_compat', 'cli'] as const) {
      expect(plan({ ...noops }, [backend])).toEqual({ dropped: [], extraBody: undefined });
    }
  });

  it('refuses what IOP cannot return on every backend: n > 1, logprobs', () => {
    for (const backend of ['ollama', 'openai_compat', 'cli'] as const) {
      expect(refusal(() => plan({ ...base, n: 2 }, [backend])).param).toBe('n');
      expect(refusal(() => plan({ ...base, logprobs: true }, [backend])).message).toContain(
        'log-probabilities',
      );
    }
  });

  it('maps tool_choice auto/none on Ollama and refuses a forced choice', () => {
    expect(plan({ ...base, tool_choice: 'none' }, ['ollama']).dropped).toEqual([]);
    expect(refusal(() => plan({ ...base, tool_choice: 'required' }, ['ollama'])).param).toBe('tool_choice');
    expect(plan({ ...base, tool_choice: 'required' }, ['openai_compat']).extraBody).toBeUndefined();
  });

  it("takes Ollama's reasoning levels and refuses the others", () => {
    expect(plan({ ...base, reasoning_effort: 'none' }, ['ollama']).dropped).toEqual([]);
    expect(refusal(() => plan({ ...base, reasoning_effort: 'minimal' }, ['ollama'])).param).toBe(
      'reasoning_effort',
    );
  });

  it('refuses sampling fields for CLI agents', () => {
    for (const field of ['temperature', 'top_p', 'max_tokens', 'stop', 'seed']) {
      expect(refusal(() => plan({ ...base, [field]: 1 }, ['cli'])).param).toBe(field);
    }
  });

  it('on a model served by several adapter types takes a field only when all of them can', () => {
    expect(refusal(() => plan({ ...base, top_k: 5 }, ['openai_compat', 'ollama'])).message).toContain(
      'Ollama',
    );
    // A no-op value is not forwarded (the Ollama node would refuse a run carrying forwarded fields).
    expect(
      plan({ ...base, parallel_tool_calls: true }, ['openai_compat', 'ollama']).extraBody,
    ).toBeUndefined();
    expect(plan({ ...base, seed: 1 }, ['openai_compat', 'ollama']).dropped).toEqual([]);
  });

  it('treats unknown backends as every adapter type', () => {
    expect(refusal(() => plan({ ...base, top_k: 5 }, [])).code).toBe('unsupported_parameter');
  });

  it('responses: checks reasoning.effort and text.format like their chat fields, and hosted tools', () => {
    const options = { endpoint: 'responses' as const };
    const input = { model: 'm', input: 'hi' };
    expect(
      plan(
        { ...input, text: { format: { type: 'json_schema', name: 'x', schema: {} } } },
        ['ollama'],
        options,
      ).dropped,
    ).toEqual([]);
    expect(
      refusal(() => plan({ ...input, reasoning: { effort: 'minimal' } }, ['ollama'], options)).param,
    ).toBe('reasoning.effort');
    const body: Record<string, unknown> = { ...input, text: { format: { type: 'json_object' } } };
    expect(plan(body, ['cli'], { ...options, dropUnsupported: true }).dropped).toEqual(['text.format']);
    expect(body['text']).toEqual({});
    expect(
      refusal(() => plan({ ...input, tools: [{ type: 'web_search' }] }, ['openai_compat'], options)).param,
    ).toBe('tools');
  });

  it("responses: takes include ['reasoning.encrypted_content'] when the answer has no reasoning item (codex)", () => {
    const options = { endpoint: 'responses' as const };
    const input = { model: 'm', input: 'hi', include: ['reasoning.encrypted_content'] };
    for (const backend of ['ollama', 'openai_compat', 'cli'] as const) {
      const body: Record<string, unknown> = { ...input };
      expect(plan(body, [backend], options)).toEqual({ dropped: [], extraBody: undefined });
      // Taken, not forwarded: the backend never sees it.
      expect(body['include']).toEqual(['reasoning.encrypted_content']);
    }
    expect(plan({ ...input, include: [] }, ['ollama'], options).dropped).toEqual([]);
  });

  it('responses: refuses include values that ask for content IOP would leave out', () => {
    const options = { endpoint: 'responses' as const };
    const input = { model: 'm', input: 'hi' };
    // With include_reasoning the answer has reasoning items, and none carries an encrypted copy.
    const withItems = refusal(() =>
      plan(
        { ...input, include_reasoning: true, include: ['reasoning.encrypted_content'] },
        ['openai_compat'],
        options,
      ),
    );
    expect(withItems.param).toBe('include');
    expect(withItems.message).toContain('include_reasoning');
    for (const value of ['file_search_call.results', 'message.output_text.logprobs']) {
      for (const backend of ['ollama', 'openai_compat', 'cli'] as const) {
        const include = ['reasoning.encrypted_content', value];
        expect(refusal(() => plan({ ...input, include }, [backend], options)).param).toBe('include');
      }
    }
    const dropped: Record<string, unknown> = { ...input, include: ['message.output_text.logprobs'] };
    expect(plan(dropped, ['ollama'], { ...options, dropUnsupported: true }).dropped).toEqual(['include']);
    expect(dropped).not.toHaveProperty('include');
  });
});
