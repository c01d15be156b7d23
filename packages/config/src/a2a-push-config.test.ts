import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from './load-config.js';

describe('a2a.push', () => {
  it('defaults to no allowed hosts, 8 attempts within an hour, 10 s per attempt', () => {
    const result = parseConfigText('edge: { id: e1 }\n', 'edge.yaml');
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.a2a.push).toEqual({
      allow_hosts: [],
      max_attempts: 8,
      retry_window_sec: 3600,
      timeout_ms: 10_000,
    });
  });

  it('accepts hosts and host:port entries and the bounds', () => {
    const result = parseConfigText(
      'a2a:\n  push: { allow_hosts: ["127.0.0.1", "hooks.internal:8443"], max_attempts: 3, retry_window_sec: 60, timeout_ms: 500 }\n',
      'edge.yaml',
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.a2a.push).toEqual({
      allow_hosts: ['127.0.0.1', 'hooks.internal:8443'],
      max_attempts: 3,
      retry_window_sec: 60,
      timeout_ms: 500,
    });
  });

  it('reports a URL as a host, out-of-range numbers and unknown keys with their paths', () => {
    const result = parseConfigText(
      'a2a:\n  push:\n    allow_hosts: ["http://hooks.example/"]\n    max_attempts: 0\n    timeout_ms: 120000\n    retries: 3\n',
      'edge.yaml',
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const paths = result.issues.map((issue) => issue.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'a2a.push.allow_hosts[0]',
        'a2a.push.max_attempts',
        'a2a.push.timeout_ms',
        expect.stringContaining('a2a.push'),
      ]),
    );
    expect(result.issues.length).toBeGreaterThanOrEqual(4);
  });
});
