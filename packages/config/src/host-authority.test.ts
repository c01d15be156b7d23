import { describe, expect, it } from '@jest/globals';
import { parseHostAuthority } from './host-authority.js';
import { parseConfigText } from './load-config.js';

describe('parseHostAuthority', () => {
  it.each([
    ['127.0.0.1:18081', { name: '127.0.0.1', port: 18081 }],
    ['LocalHost:80', { name: 'localhost', port: 80 }],
    ['[::1]:19094', { name: '::1', port: 19094 }],
    ['[::1]', { name: '::1', port: undefined }],
    ['edge.example.com', { name: 'edge.example.com', port: undefined }],
    ['edge.example.com.:443', { name: 'edge.example.com', port: 443 }],
  ])('parses %s', (value, expected) => {
    expect(parseHostAuthority(value)).toEqual(expected);
  });

  it.each([
    '',
    'user@host:80',
    'host/path',
    'host:0',
    'host:65536',
    'host:12ab',
    '::1',
    '[::1',
    '[not-v6]:80',
    'bad host',
    'under_score.example',
    '-lead.example',
  ])('rejects %j', (value) => {
    expect(parseHostAuthority(value)).toBeUndefined();
  });
});

describe('http.allowed_hosts', () => {
  it('accepts host and host:port entries', () => {
    const result = parseConfigText(
      'http: { allowed_hosts: ["edge.example.com", "proxy.internal:8443", "[2001:db8::1]"] }\n',
      'edge.yaml',
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.http.allowed_hosts).toEqual([
      'edge.example.com',
      'proxy.internal:8443',
      '[2001:db8::1]',
    ]);
  });

  it('defaults to none', () => {
    const result = parseConfigText('edge: { id: e1 }\n', 'edge.yaml');
    if (!result.ok) throw new Error('invalid');
    expect(result.config.http.allowed_hosts).toEqual([]);
  });

  it('reports a malformed entry with its path', () => {
    const result = parseConfigText(
      'http:\n  allowed_hosts: ["ok.example", "http://no.example/"]\n',
      'edge.yaml',
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues).toEqual([
      expect.objectContaining({ path: 'http.allowed_hosts[1]', line: 2, code: 'format' }),
    ]);
  });
});
