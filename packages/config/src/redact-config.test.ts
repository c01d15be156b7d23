import { describe, expect, it } from '@jest/globals';
import { formatIssue } from './format-issue.js';
import { parseConfigText } from './load-config.js';
import { REDACTED, redactConfig } from './redact-config.js';
import { renderConfig } from './render-config.js';
import type { EdgeConfig } from './types.js';

const TEXT = `
refresh: { admin_token: "adm-1" }
bootstrap: { public_url: "https://ops:pw-1@edge.example.com" }
openai: { api_keys: ["key-1", "key-2"] }
a2a: { bearer_token: "bear-1" }
nodes:
  - id: n1
    token: "tok-1"
    adapters:
      cli: { profiles: { p: { command: x, env: { OPENAI_API_KEY: "env-1", GH_TOKEN: "env-2", HOME: "/home/x" } } } }
      ollama: { base_url: "http://u:pw-2@127.0.0.1:11434" }
      vllm: { base_url: "http://gpu:8000/v1", headers: { Authorization: "Bearer hdr-1" } }
  - id: n2
`;
const SECRETS = ['adm-1', 'pw-1', 'key-1', 'key-2', 'bear-1', 'tok-1', 'env-1', 'env-2', 'pw-2', 'hdr-1'];

function config(): EdgeConfig {
  const result = parseConfigText(TEXT, 't.yaml');
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
  return result.config;
}

describe('redactConfig', () => {
  it('replaces every secret and leaves empty secrets and ordinary values visible', () => {
    const redacted = redactConfig(config());
    const text = JSON.stringify(redacted);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(redacted.refresh.admin_token).toBe(REDACTED);
    expect(redacted.openai.api_keys.map((key) => key.key)).toEqual(['', '']);
    expect(redacted.openai.api_keys.every((key) => /^[0-9a-f]{64}$/.test(key.key_sha256))).toBe(true);
    expect(redacted.a2a.bearer_token).toBe(REDACTED);
    expect(redacted.nodes[0]?.token).toBe(REDACTED);
    expect(redacted.nodes[1]?.token).toBe('');
    expect(redacted.bootstrap.public_url).toBe('https://ops:[redacted]@edge.example.com/');
    expect(text).toContain('"HOME":"/home/x"');
    expect(text).toContain('"Authorization":"[redacted]"');
  });

  it('does not modify the frozen input', () => {
    const original = config();
    redactConfig(original);
    expect(original.nodes[0]?.token).toBe('tok-1');
  });

  it('renders YAML and JSON without secrets', () => {
    for (const format of ['yaml', 'json'] as const) {
      const text = renderConfig(config(), format);
      for (const secret of SECRETS) expect(text).not.toContain(secret);
    }
    expect(JSON.parse(renderConfig(config(), 'json'))).toMatchObject({ nodes: [{ id: 'n1' }, { id: 'n2' }] });
  });

  it('renders YAML that loads back to the same (redacted) config', () => {
    const reloaded = parseConfigText(
      renderConfig(config(), 'yaml').replace(/\s+adapter_instance: .*$/gm, ''),
      'printed.yaml',
    );
    // adapter_instance is derived, not a file key; everything else round-trips: normalization is a fixed point.
    if (!reloaded.ok) throw new Error(reloaded.issues.map(formatIssue).join('\n'));
    expect(reloaded.config).toEqual(redactConfig(config()));
  });
});
