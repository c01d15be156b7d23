import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from './load-config.js';
import { securityWarnings } from './check-exposure.js';

function check(yaml: string) {
  return parseConfigText(yaml, 'edge.yaml');
}

const tls = 'edge: { tls: { enabled: true, cert_file: "c.pem", key_file: "k.pem" } }\n';
const adminToken = 'refresh: { admin_token: "t0ken" }\n';

describe('no open door', () => {
  it('refuses an OpenAI API on 0.0.0.0 without api_keys, and an A2A API without a bearer token', () => {
    const result = check(
      'openai: { enabled: true, listen: "0.0.0.0:18081" }\na2a: { enabled: true, listen: "[::]:18082" }\n',
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((issue) => [issue.path, issue.code, issue.line])).toEqual([
      ['openai.listen', 'unauthenticated', 1],
      ['a2a.listen', 'unauthenticated', 2],
    ]);
    expect(result.issues[0]?.message).toContain('openai.allow_unauthenticated: true');
  });

  it('accepts them with keys, on loopback, or with allow_unauthenticated (which is then a warning)', () => {
    const keyed = check(
      'openai: { enabled: true, listen: "0.0.0.0:18081", api_keys: ["k1"] }\n' +
        'a2a: { enabled: true, listen: "0.0.0.0:18082", bearer_token: "b" }\n' +
        tls +
        adminToken,
    );
    expect(keyed.ok && securityWarnings(keyed.config)).toEqual([]);
    expect(check('openai: { enabled: true, listen: "127.0.0.1:18081" }\n').ok).toBe(true);
    const open = check(
      'openai: { enabled: true, listen: "0.0.0.0:18081", allow_unauthenticated: true }\n' +
        'a2a: { enabled: true, listen: "0.0.0.0:18082", allow_unauthenticated: true }\n' +
        tls +
        adminToken,
    );
    expect(open.ok).toBe(true);
    if (!open.ok) return;
    expect(securityWarnings(open.config)).toEqual([
      'openai.allow_unauthenticated: the OpenAI API on 0.0.0.0:18081 accepts anyone who can reach it',
      'a2a.allow_unauthenticated: the A2A API on 0.0.0.0:18082 accepts anyone who can reach it',
    ]);
  });

  it('accepts an A2A API beyond loopback guarded by openai.api_keys alone (A2A accepts those keys)', () => {
    const result = check(
      'openai: { api_keys: [{ id: team, key: k1 }] }\na2a: { enabled: true, listen: "0.0.0.0:18082" }\n' +
        tls +
        adminToken,
    );
    expect(result.ok).toBe(true);
    if (result.ok) expect(securityWarnings(result.config)).toEqual([]);
  });

  it('requires edge.tls for an admin API with a token beyond loopback', () => {
    const plain = check('refresh: { listen: "0.0.0.0:19093", admin_token: "secret" }\n');
    expect(plain.ok).toBe(false);
    if (!plain.ok)
      expect(plain.issues.map((issue) => [issue.path, issue.code])).toEqual([['refresh.listen', 'insecure']]);
    expect(check(`refresh: { listen: "0.0.0.0:19093", admin_token: "secret" }\n${tls}`).ok).toBe(true);
    // refresh.enabled: false only turns off RefreshConfig; the admin API (and its token) is still served.
    expect(check('refresh: { enabled: false, listen: "0.0.0.0:19093", admin_token: "secret" }\n').ok).toBe(
      false,
    );
  });

  it('requires the admin token and edge.tls for a dashboard beyond loopback', () => {
    const issues = (yaml: string) => {
      const result = check(yaml);
      return result.ok ? [] : result.issues.map((issue) => [issue.path, issue.code]);
    };
    expect(issues('ui: { enabled: true, listen: "0.0.0.0:19094" }\n')).toEqual([
      ['ui.listen', 'unauthenticated'],
    ]);
    expect(
      issues('ui: { enabled: true, listen: "0.0.0.0:19094" }\nrefresh: { admin_token: "secret" }\n'),
    ).toEqual([['ui.listen', 'insecure']]);
    expect(
      issues(`ui: { enabled: true, listen: "0.0.0.0:19094" }\nrefresh: { admin_token: "secret" }\n${tls}`),
    ).toEqual([]);
    expect(issues('ui: { enabled: true, listen: "127.0.0.1:19094" }\n')).toEqual([]);
  });

  it('warns at every start while the admin API (and dashboard) have no admin token, and not with one', () => {
    const open = check(`${tls}ui: { enabled: true }\n`);
    expect(open.ok && securityWarnings(open.config)).toEqual([
      expect.stringMatching(
        /^refresh\.admin_token is empty: the admin API on 127\.0\.0\.1:19093 and the dashboard on 127\.0\.0\.1:19094 answer any local account/,
      ),
    ]);
    const admin = check(`${tls}refresh: { admin_keys: [{ id: ops, key: k, role: operator }] }\n`);
    expect(admin.ok && securityWarnings(admin.config)).toEqual([]);
  });

  it('warns that a config without edge.tls runs the node link in clear', () => {
    const result = check('nodes: []\n');
    expect(result.ok && securityWarnings(result.config)[0]).toMatch(
      /^edge\.tls is off: the node link is NOT encrypted/,
    );
  });

  it('reads bootstrap.edge_address, empty by default, and refuses one that is not host:port', () => {
    const result = check('bootstrap: { edge_address: "edge.example.com:443" }\n');
    expect(result.ok && result.config.bootstrap.edge_address).toBe('edge.example.com:443');
    const defaulted = check('nodes: []\n');
    expect(defaulted.ok && defaulted.config.bootstrap.edge_address).toBe('');
    expect(check('bootstrap: { edge_address: "no port" }\n').ok).toBe(false);
  });
});
