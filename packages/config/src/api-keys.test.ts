// openai.api_keys as principals: plain strings and objects with limits, digests, validation and refresh class.
import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { classifyRefresh } from './classify-refresh.js';
import { parseConfigText } from './load-config.js';
import { redactConfig } from './redact-config.js';
import type { ConfigIssue, EdgeConfig } from './types.js';

function load(text: string): EdgeConfig {
  const result = parseConfigText(text, 'test.yaml');
  if (!result.ok) throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return result.config;
}

function issues(text: string): ConfigIssue[] {
  const result = parseConfigText(text, 'test.yaml');
  if (result.ok) throw new Error('expected the config to be rejected');
  return [...result.issues];
}

const sha = (value: string) => createHash('sha256').update(value).digest('hex');

describe('openai.api_keys', () => {
  it('turns a plain string into an unlimited key named after its digest', () => {
    const config = load('openai: { api_keys: ["sk-plain"] }');
    expect(config.openai.api_keys).toEqual([
      {
        id: `key-${sha('sk-plain').slice(0, 8)}`,
        key: 'sk-plain',
        key_sha256: sha('sk-plain'),
        models: [],
        rpm: null,
        tpm: null,
        max_concurrent: null,
        token_budget: null,
        weight: 1,
        priority: 'interactive',
      },
    ]);
  });

  it('reads an object entry with limits, and a digest-only entry', () => {
    const digest = sha('sk-team-b').toUpperCase();
    const config = load(`
openai:
  api_keys:
    - { id: team-a, key: sk-team-a, models: [m1], rpm: 5, tpm: 1000, max_concurrent: 1,
        token_budget: { tokens: 100, per: month } }
    - { id: team-b, key_sha256: "${digest}" }
`);
    expect(config.openai.api_keys[0]).toEqual({
      id: 'team-a',
      key: 'sk-team-a',
      key_sha256: sha('sk-team-a'),
      models: ['m1'],
      rpm: 5,
      tpm: 1000,
      max_concurrent: 1,
      token_budget: { tokens: 100, per: 'month' },
      weight: 1,
      priority: 'interactive',
    });
    expect(config.openai.api_keys[1]).toMatchObject({ id: 'team-b', key: '', key_sha256: sha('sk-team-b') });
  });

  it('reads a key’s fair-share weight and priority, and refuses them out of range with their paths', () => {
    const config = load(`
openai:
  api_keys:
    - { id: bulk, key: sk-bulk, weight: 3, priority: batch }
    - { id: chat, key: sk-chat }
`);
    expect(config.openai.api_keys[0]).toMatchObject({ weight: 3, priority: 'batch' });
    expect(config.openai.api_keys[1]).toMatchObject({ weight: 1, priority: 'interactive' });
    const found = issues(`
openai:
  api_keys:
    - { id: a, key: x, weight: 0 }
    - { id: b, key: y, weight: 1001 }
    - { id: c, key: z, weight: 1.5, priority: urgent }
`);
    expect(found.map((issue) => `${issue.path} ${issue.code}`)).toEqual(
      expect.arrayContaining([
        'openai.api_keys[0].weight range',
        'openai.api_keys[1].weight range',
        'openai.api_keys[2].weight type',
        'openai.api_keys[2].priority enum',
      ]),
    );
  });

  it('rejects entries without exactly one secret, bad limits, and duplicates, with their paths', () => {
    const found = issues(`
openai:
  api_keys:
    - { id: a }
    - { id: b, key: x, key_sha256: "${sha('x')}" }
    - { id: c, key: y, rpm: 0, token_budget: { tokens: 10, per: week } }
    - { id: c, key: z }
    - { id: d, key: z }
    - { id: "bad id", key: w }
`);
    const byPath = found.map((issue) => `${issue.path} ${issue.code}`);
    expect(byPath).toEqual(
      expect.arrayContaining([
        'openai.api_keys[0] required',
        'openai.api_keys[1] required',
        'openai.api_keys[2].rpm range',
        'openai.api_keys[2].token_budget.per enum',
        'openai.api_keys[3] duplicate',
        'openai.api_keys[4] duplicate',
        'openai.api_keys[5].id format',
      ]),
    );
    // The failing branch reports the problem; the if/then/else wrapper adds no noise.
    expect(found.every((issue) => !issue.message.includes('must match'))).toBe(true);
  });

  it('redacts clear-text secrets to their digest but keeps ids and limits printable', () => {
    const redacted = redactConfig(load('openai: { api_keys: [{ id: a, key: sk-secret, rpm: 3 }] }'));
    expect(redacted.openai.api_keys[0]).toMatchObject({
      id: 'a',
      key: '',
      key_sha256: sha('sk-secret'),
      rpm: 3,
    });
    expect(JSON.stringify(redacted)).not.toContain('sk-secret');
  });

  it('classifies key changes as live and the rest of the openai section as restart', () => {
    const current = load('openai: { api_keys: [{ id: a, key: k1 }] }');
    const keys = classifyRefresh(
      current,
      parseConfigText('openai: { api_keys: [{ id: a, key: k1, rpm: 2 }, { id: b, key: k2 }] }', 't'),
      'apply',
    );
    expect(keys.status).toBe('applied');
    expect(keys.reports).toEqual([expect.objectContaining({ path: 'openai.api_keys', class: 'live' })]);
    const listen = classifyRefresh(
      current,
      parseConfigText('openai: { listen: "127.0.0.1:1", api_keys: [{ id: a, key: k1 }] }', 't'),
      'apply',
    );
    expect(listen.status).toBe('restart_required');
  });
});

describe('refresh.admin_keys', () => {
  it('reads named admin keys with a role, digest-only or clear, and redacts the clear text', () => {
    const config = load(`
refresh:
  admin_keys:
    - { id: viewer, key_sha256: "${sha('sk-read')}", role: read }
    - { id: ops, key: sk-operator, role: operator }
`);
    expect(config.refresh.admin_keys).toEqual([
      { id: 'viewer', key: '', key_sha256: sha('sk-read'), role: 'read' },
      { id: 'ops', key: 'sk-operator', key_sha256: sha('sk-operator'), role: 'operator' },
    ]);
    expect(JSON.stringify(redactConfig(config))).not.toContain('sk-operator');
  });

  it('rejects a key without a secret or with an unknown role', () => {
    const found = issues('refresh: { admin_keys: [{ id: a, role: read }, { id: b, key: x, role: admin }] }');
    expect(found.map((issue) => `${issue.path} ${issue.code}`)).toEqual(
      expect.arrayContaining(['refresh.admin_keys[0] required', 'refresh.admin_keys[1].role enum']),
    );
  });
});

describe('usage and tracing sections', () => {
  it('defaults to 90 days of usage, 1024 reserved answer tokens and tracing off', () => {
    const config = load('');
    expect(config.usage).toEqual({ retention_days: 90, reserve_max_tokens: 1024 });
    expect(config.tracing).toEqual({ enabled: false, otlp_endpoint: '', sample_ratio: 1 });
  });

  it('takes a reserve of 0 (the prompt only) and refuses a negative or fractional one with its path', () => {
    expect(load('usage: { reserve_max_tokens: 0 }').usage.reserve_max_tokens).toBe(0);
    expect(issues('usage: { reserve_max_tokens: -1 }').map((issue) => issue.path)).toEqual([
      'usage.reserve_max_tokens',
    ]);
    expect(issues('usage: { reserve_max_tokens: 2.5 }').map((issue) => issue.path)).toEqual([
      'usage.reserve_max_tokens',
    ]);
  });

  it('validates the sample ratio and endpoint', () => {
    const found = issues('tracing: { enabled: true, sample_ratio: 2, otlp_endpoint: "ftp://x" }');
    expect(found.map((issue) => issue.path).sort()).toEqual([
      'tracing.otlp_endpoint',
      'tracing.sample_ratio',
    ]);
  });
});
