import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from './load-config.js';

function load(text: string) {
  return parseConfigText(`edge: { id: edge-1 }\n${text}`, 'cluster.yaml');
}

describe('cluster config', () => {
  it('is off without a cluster section (one edge, no NATS)', () => {
    const result = load('');
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.cluster).toEqual({
      enabled: false,
      fabric_key_file: '',
      nats: {
        servers: [],
        allow_plaintext: false,
        credentials_file: '',
        tls: { enabled: false, ca_file: '', cert_file: '', key_file: '' },
      },
      heartbeat_ms: 500,
      state_ttl_ms: 3000,
    });
  });

  it('reads the fabric key, servers, credentials, TLS and timings', () => {
    const result = load(`cluster:
  enabled: true
  fabric_key_file: /etc/iop/fabric.key
  nats:
    servers: [nats://10.0.0.5:4222, nats://10.0.0.6:4222]
    credentials_file: /etc/iop/edge.creds
    tls: { enabled: true, ca_file: /etc/iop/ca.pem }
  heartbeat_ms: 200
  state_ttl_ms: 2000
`);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.cluster).toMatchObject({
      enabled: true,
      fabric_key_file: '/etc/iop/fabric.key',
      nats: {
        servers: ['nats://10.0.0.5:4222', 'nats://10.0.0.6:4222'],
        credentials_file: '/etc/iop/edge.creds',
        tls: { enabled: true, ca_file: '/etc/iop/ca.pem', cert_file: '', key_file: '' },
      },
      heartbeat_ms: 200,
      state_ttl_ms: 2000,
    });
  });

  it('resolves a relative fabric key file against the config file', () => {
    const result = parseConfigText(
      'edge: { id: edge-1 }\ncluster: { enabled: true, fabric_key_file: keys/fabric.key, nats: { servers: [nats://127.0.0.1:4222] } }\n',
      '/etc/iop/edge.yaml',
      { baseDir: '/etc/iop' },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.cluster.fabric_key_file).toBe('/etc/iop/keys/fabric.key');
  });

  it('refuses NATS beyond loopback without TLS unless allow_plaintext, and then warns', async () => {
    const { securityWarnings } = await import('./check-exposure.js');
    const servers = '[nats://127.0.0.1:4222, "nats://[::1]:4222", nats://10.0.0.5:4222, tls://10.0.0.6:4222]';
    const refused = load(`cluster: { enabled: true, fabric_key_file: k, nats: { servers: ${servers} } }\n`);
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.issues.map((issue) => [issue.path, issue.code])).toEqual([
        ['cluster.nats.servers[2]', 'insecure'],
      ]);
    }
    const withTls = load(
      `cluster: { enabled: true, fabric_key_file: k, nats: { servers: ${servers}, tls: { enabled: true } } }\n`,
    );
    if (!withTls.ok) throw new Error(JSON.stringify(withTls.issues));
    expect(securityWarnings(withTls.config).filter((line) => line.includes('cluster'))).toEqual([]);
    const allowed = load(
      `cluster: { enabled: true, fabric_key_file: k, nats: { servers: ${servers}, allow_plaintext: true } }\n`,
    );
    if (!allowed.ok) throw new Error(JSON.stringify(allowed.issues));
    expect(securityWarnings(allowed.config).filter((line) => line.includes('cluster'))).toEqual([
      expect.stringContaining('nats://10.0.0.5:4222 is reached without TLS') as unknown,
    ]);
  });

  it('needs servers and a fabric key when enabled, a TTL of at least two heartbeats, and no unknown keys', () => {
    const result = load(`cluster: { enabled: true, heartbeat_ms: 1000, state_ttl_ms: 1500, peers: [] }\n`);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((issue) => [issue.path, issue.code])).toEqual(
      expect.arrayContaining([
        ['cluster.nats.servers', 'required'],
        ['cluster.fabric_key_file', 'required'],
        ['cluster.state_ttl_ms', 'conflict'],
        ['cluster.peers', 'unknown_key'],
      ]),
    );
  });

  it('lets bootstrap.edge_address list every edge of the cluster (what the one-liner carries)', () => {
    const listed = load(`bootstrap: { edge_address: 'edge-a.example:19090,edge-b.example:19090' }\n`);
    if (!listed.ok) throw new Error(JSON.stringify(listed.issues));
    expect(listed.config.bootstrap.edge_address).toBe('edge-a.example:19090,edge-b.example:19090');
    const bad = load(`bootstrap: { edge_address: 'edge-a.example:19090,nowhere' }\n`);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues.map((issue) => issue.path)).toContain('bootstrap.edge_address');
  });

  it('is a restart-only section for config refresh', async () => {
    const { classifyRefresh } = await import('./classify-refresh.js');
    const before = load('');
    const after = load(
      'cluster: { enabled: true, fabric_key_file: k, nats: { servers: [nats://127.0.0.1:4222] } }\n',
    );
    if (!before.ok || !after.ok) throw new Error('configs must load');
    const classification = classifyRefresh(before.config, after, 'apply');
    expect(classification.status).toBe('restart_required');
    expect(classification.reports).toEqual(
      expect.arrayContaining([expect.objectContaining({ class: 'restart' })]),
    );
    expect(classification.reports.every((report) => report.path.startsWith('cluster'))).toBe(true);
  });
});
