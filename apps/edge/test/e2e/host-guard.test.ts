// "Loopback is not a door" (issue 30) against a real `iop-edge serve` on loopback: every HTTP listener (OpenAI,
// A2A, dashboard, bootstrap, metrics) and the admin API answer only requests that name them. A DNS-rebinding page
// (Host: rebind.evil.example, Origin matching it) is refused with 421 before anything runs, including the
// dashboard's config refresh; a foreign Origin with the right Host gets 403; the listener's own addresses are
// served. The admin API refuses a caller without the token on loopback too: `nodes list --addr` from a directory
// with no config fails, with the edge's config it works.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { portOf, rawHttpRequest as ask } from '../../src/test-support/raw-http-request.js';
import {
  ProcessGroup,
  runEdgeCommand,
  startEdgeProcess,
  type EdgeProcess,
} from '../support/e2e-processes.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'iop-admin-e2e-host-guard-0123456789';
const group = new ProcessGroup();
let edge: EdgeProcess;
let dir: string;
const ports: Record<string, number> = {};

beforeAll(async () => {
  dir = await group.tempDir('iop-e2e-host-guard-');
  const artifacts = path.join(dir, 'artifacts');
  mkdirSync(artifacts);
  edge = await startEdgeProcess(group, dir, {
    edge: { id: 'edge-guard', listen: '127.0.0.1:0', data_dir: path.join(dir, 'data') },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0', admin_token: ADMIN_TOKEN },
    bootstrap: { listen: '127.0.0.1:0', artifact_dir: artifacts },
    openai: { enabled: true, listen: '127.0.0.1:0' },
    a2a: { enabled: true, listen: '127.0.0.1:0' },
    ui: { enabled: true, listen: '127.0.0.1:0' },
    models: [],
    nodes: [],
  });
  const line = (label: string): string =>
    new RegExp(`^ {2}${label}\\s+(\\S+)`, 'm').exec(edge.stdout())?.[1] ?? '';
  for (const name of ['openai', 'a2a', 'ui', 'bootstrap', 'metrics']) {
    ports[name] = portOf(line(name));
    expect(ports[name]).toBeGreaterThan(0);
  }
});

afterAll(async () => {
  await group.close();
});

describe('iop-edge serve: Host and Origin on every listener', () => {
  const own: Record<string, [string, string]> = {
    openai: ['GET', '/v1/models'],
    a2a: ['GET', '/.well-known/agent-card.json'],
    ui: ['GET', '/'],
    bootstrap: ['GET', '/install.sh'],
    metrics: ['GET', '/healthz'],
  };

  it.each(Object.keys(own))('%s: a foreign Host gets 421, its own addresses are served', async (name) => {
    const port = ports[name] ?? 0;
    const [method, requestPath] = own[name] ?? ['GET', '/'];
    const foreign = await ask(port, method, requestPath, { host: `rebind.evil.example:${port}` });
    expect(foreign.status).toBe(421);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: { code: 'host_not_allowed' } });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const served = await ask(port, method, requestPath, { host });
      expect([name, host, served.status]).not.toEqual([name, host, 421]);
      expect(served.status).toBeLessThan(500);
    }
  });

  it('refuses a DNS-rebinding POST to the dashboard config refresh (Origin matching the rebound Host)', async () => {
    const port = ports.ui ?? 0;
    const body = JSON.stringify({ mode: 'apply', config_yaml: 'models: []\n' });
    const rebound = await ask(
      port,
      'POST',
      '/api/v1/config/refresh',
      {
        host: `rebind.evil.example:${port}`,
        origin: `http://rebind.evil.example:${port}`,
        'content-type': 'application/json',
        authorization: `Bearer ${ADMIN_TOKEN}`,
      },
      body,
    );
    expect(rebound.status).toBe(421);
    // The right Host with a foreign page's Origin: 403, even with the token.
    const foreignPage = await ask(
      port,
      'POST',
      '/api/v1/config/refresh',
      {
        host: `127.0.0.1:${port}`,
        origin: 'http://evil.example',
        'content-type': 'application/json',
        authorization: `Bearer ${ADMIN_TOKEN}`,
      },
      body,
    );
    expect(foreignPage.status).toBe(403);
    // The same call from the dashboard's own origin reaches the handler (and needs the token there).
    const own = await ask(
      port,
      'POST',
      '/api/v1/config/refresh',
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, 'content-type': 'application/json' },
      body,
    );
    expect(own.status).toBe(401);
  });

  it('refuses a foreign Origin on the OpenAI listener before admission', async () => {
    const port = ports.openai ?? 0;
    const answer = await ask(
      port,
      'POST',
      '/v1/chat/completions',
      { host: `127.0.0.1:${port}`, origin: 'https://evil.example', 'content-type': 'text/plain' },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'origin_not_allowed' } });
  });
});

describe('iop-edge serve: the admin API needs its token on loopback', () => {
  it('nodes list --addr without the token, from a directory with no config, is refused; with the config it works', async () => {
    const empty = await group.tempDir('iop-e2e-no-config-');
    const refused = await runEdgeCommand(
      group,
      ['nodes', 'list', '--addr', edge.addresses.admin],
      30_000,
      empty,
    );
    expect(refused.status.code).not.toBe(0);
    expect(refused.stderr).toMatch(/rejected the call: missing or invalid admin token/);
    const allowed = await runEdgeCommand(
      group,
      ['nodes', 'list', '--addr', edge.addresses.admin, '--config', edge.configPath],
      30_000,
      empty,
    );
    expect(allowed.stderr).toBe('');
    expect(allowed.status.code).toBe(0);
  });
});
