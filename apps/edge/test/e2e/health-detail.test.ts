// Health probe causes across processes: a real `iop-edge serve` and a real `iop-node run` whose Ollama adapter
// points at a closed port and whose OpenAI-compatible adapter points at a server answering 404. The node log says
// why each probe fails (warn once per state, debug every time), and `nodes list --json` shows the last probe's
// `health_detail` and `health_cause`, so "connection refused" and "404" are told apart without reading code. A CLI
// profile is measured too: a missing command is `command_not_found`, one answering `--version` is healthy.
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ProcessGroup,
  runEdgeCommand,
  waitUntil,
  startEdgeWithConfigFile,
  startNodeProcess,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';

const TOKEN = 'iop_e2e_health_detail_token_0123456';
/** The node's probe interval here: several rounds fit in a few seconds. */
const PROBE_INTERVAL_MS = 300;

interface ProviderJson {
  provider_id: string;
  health: string;
  health_detail: string;
  health_cause: string;
}

describe('health probe causes: node log and nodes list', () => {
  const group = new ProcessGroup();
  let notFound: http.Server;
  let closedPort = 0;
  let edge: EdgeProcess;
  let node: TestProcess;
  let admin = '';

  beforeAll(async () => {
    notFound = http.createServer((_request, response) => {
      response.statusCode = 404;
      response.setHeader('content-type', 'application/json');
      response.end('{"error":{"message":"no such route"}}');
    });
    await new Promise<void>((resolve) => notFound.listen(0, '127.0.0.1', resolve));
    const notFoundUrl = `http://127.0.0.1:${(notFound.address() as net.AddressInfo).port}/v1`;
    // A port that was free a moment ago: nothing listens there.
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));

    const dir = await group.tempDir('iop-health-detail-e2e-');
    const configPath = path.join(dir, 'edge.yaml');
    await writeFile(
      configPath,
      [
        'edge:',
        '  id: edge-health-e2e',
        '  listen: 127.0.0.1:0',
        `  data_dir: ${JSON.stringify(path.join(dir, 'data'))}`,
        '  register_timeout_ms: 1000',
        '  heartbeat_interval_ms: 500',
        '  heartbeat_timeout_ms: 3000',
        'logging: { level: info, format: json }',
        'metrics: { enabled: false }',
        'refresh: { enabled: true, listen: 127.0.0.1:0 }',
        'bootstrap: { listen: 127.0.0.1:0 }',
        'openai: { enabled: false }',
        'a2a: { enabled: false }',
        'models: []',
        'nodes:',
        '  - id: n1',
        `    token: ${TOKEN}`,
        `    runtime: { max_concurrency: 2, health_probe_interval_ms: ${PROBE_INTERVAL_MS} }`,
        '    discovery: { openai_compat_urls: [], local_ports: [] }',
        '    adapters:',
        `      ollama: { enabled: true, base_url: 'http://127.0.0.1:${closedPort}' }`,
        '      instances:',
        `        - { name: gone, type: openai_compat, enabled: true, provider: vllm, base_url: '${notFoundUrl}' }`,
        '        - name: agents',
        '          type: cli',
        '          enabled: true',
        '          profiles:',
        "            present: { command: 'bin/iop-fake-cli', mode: 'persistent' }",
        "            absent: { command: 'iop-no-such-agent-cli', mode: 'persistent' }",
        '    providers:',
        "      - { id: refused, type: ollama, category: local_inference, adapter: ollama, models: ['m'], capacity: 1 }",
        "      - { id: missing, type: vllm, category: api, adapter: gone, models: ['m2'], capacity: 1 }",
        "      - { id: agent-ok, type: cli, category: cli, adapter: agents, models: ['present'], capacity: 1 }",
        "      - { id: agent-missing, type: cli, category: cli, adapter: agents, models: ['absent'], capacity: 1 }",
        '',
      ].join('\n'),
    );
    edge = await startEdgeWithConfigFile(group, dir, configPath);
    admin = edge.addresses.admin;
    node = startNodeProcess(group, {
      edge: edge.addresses.transport,
      nodeId: 'n1',
      token: TOKEN,
      dataDir: path.join(dir, 'node-data'),
      args: ['--log-level', 'debug'],
      env: { OLLAMA_HOST: `127.0.0.1:${closedPort}` },
    });
  }, 60_000);

  afterAll(async () => {
    await group.close();
    notFound.closeAllConnections();
    await new Promise((resolve) => notFound.close(resolve));
  });

  const records = (message: string, providerId: string) =>
    node.logRecords().filter((record) => record['msg'] === message && record['providerId'] === providerId);
  const warnings = (providerId: string) =>
    node
      .logRecords()
      .filter((record) => record['providerId'] === providerId && record['cause'] !== undefined)
      .filter((record) => record['level'] === 40 || record['level'] === 'warn');

  it('the node logs the cause of a probe against a closed port, at warn once and at debug every round', async () => {
    await waitUntil(
      () => records('provider health probe failed', 'refused').length >= 4,
      30_000,
      () => `four failed probe rounds\n${node.describe()}`,
    );
    const warned = warnings('refused');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({
      health: 'unreachable',
      cause: 'connection_refused',
      adapter: 'ollama',
    });
    expect(String(warned[0]['detail'])).toContain(`ECONNREFUSED 127.0.0.1:${closedPort}`);
    expect(String(warned[0]['msg'])).toBe(
      `provider refused is unreachable: connection_refused (${String(warned[0]['detail'])})`,
    );
    for (const record of records('provider health probe failed', 'refused')) {
      expect(record['cause']).toBe('connection_refused');
    }
    const missing = warnings('missing');
    expect(missing).toHaveLength(1);
    expect(missing[0]).toMatchObject({ health: 'unhealthy', cause: 'http_status' });
    expect(String(missing[0]['detail'])).toContain('HTTP 404');
  }, 40_000);

  it('nodes list --json shows health_detail and health_cause of the last probe', async () => {
    const listed = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', admin]);
    expect(listed.status.code).toBe(0);
    const nodes = (JSON.parse(listed.stdout) as { nodes: { node_id: string; providers: ProviderJson[] }[] })
      .nodes;
    const providers = nodes.find((entry) => entry.node_id === 'n1')?.providers ?? [];
    const refused = providers.find((provider) => provider.provider_id === 'refused');
    expect(refused).toMatchObject({ health: 'unreachable', health_cause: 'connection_refused' });
    expect(refused?.health_detail).toContain(`ECONNREFUSED 127.0.0.1:${closedPort}`);
    const missing = providers.find((provider) => provider.provider_id === 'missing');
    expect(missing).toMatchObject({ health: 'unhealthy', health_cause: 'http_status' });
    expect(missing?.health_detail).toContain('HTTP 404');
  }, 40_000);

  it('a CLI profile whose command is missing is unhealthy with command_not_found; one that answers --version is healthy', async () => {
    let providers: ProviderJson[] = [];
    await waitUntil(
      async () => {
        const listed = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', admin]);
        const nodes = (
          JSON.parse(listed.stdout) as { nodes: { node_id: string; providers: ProviderJson[] }[] }
        ).nodes;
        providers = nodes.find((entry) => entry.node_id === 'n1')?.providers ?? [];
        return providers.some(
          (provider) => provider.provider_id === 'agent-ok' && provider.health === 'healthy',
        );
      },
      30_000,
      () => `agent-ok healthy\n${JSON.stringify(providers)}\n${node.describe()}`,
    );
    const absent = providers.find((provider) => provider.provider_id === 'agent-missing');
    expect(absent).toMatchObject({ health: 'unhealthy', health_cause: 'command_not_found' });
    expect(absent?.health_detail).toContain('iop-no-such-agent-cli');
    expect(providers.find((provider) => provider.provider_id === 'agent-ok')?.health_detail).toContain(
      'fake-cli 0.0.0-fake',
    );
  }, 40_000);
});
