// Zero-YAML join across processes: a real `iop-edge serve` and a real `iop-node run` whose edge.yaml entry has no
// adapters, on a "host" with a fake Ollama at OLLAMA_HOST, a fake vLLM at a `discovery.openai_compat_urls` entry,
// a server that accepts and never answers at another entry, and fake `claude` / `codex` executables on PATH.
// `nodes list --json` shows what the node found; `node adopt --dry-run` prints entries and changes nothing;
// `node adopt` writes edge.yaml (the test's comment survives), the refresh reports `applied`, and chat requests
// for a discovered Ollama model and for the vLLM model succeed through the pool — no process restarted.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFakeOllama, startFakeOpenAI, type FakeServer } from '@iop/testkit';
import { create } from '@iop/wire';
import { createAdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import {
  ProcessGroup,
  runEdgeCommand,
  scrapeMetrics,
  metricSum,
  waitUntil,
  startEdgeWithConfigFile,
  startNodeProcess,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';

const TOKEN = 'iop_e2e_discovery_token_0123456789';
const OLLAMA_MODELS = ['llama3.2:latest', 'qwen3:8b'];
const VLLM_MODEL = 'Qwen/Qwen3-8B';
const COMMENT = '# placed by the discovery e2e test: node adopt keeps this line';
/** The node's per-request discovery deadline (DEFAULT_HTTP_PROBE_TIMEOUT_MS). */
const HTTP_PROBE_TIMEOUT_MS = 1500;

interface DiscoveredJson {
  backends: { kind: string; base_url: string; models: string[]; version: string }[];
  clis: { name: string; path: string; version: string }[];
  host: { os: string; cpu_cores: number; memory_bytes: number };
}

describe('zero-YAML join: discovery and node adopt', () => {
  const group = new ProcessGroup();
  let ollama: FakeServer;
  let vllm: FakeServer;
  let silent: net.Server;
  const silentSockets = new Set<net.Socket>();
  let dir: string;
  let configPath: string;
  let edge: EdgeProcess;
  let node: TestProcess;
  let admin = '';
  let openai = '';
  let metrics = '';
  let binDir = '';
  let nodeStartedAt = 0;

  beforeAll(async () => {
    ollama = await startFakeOllama({ behavior: { models: OLLAMA_MODELS } });
    vllm = await startFakeOpenAI({ behavior: { models: [VLLM_MODEL] } });
    // Accepts connections and never answers: a probe there must give up at its deadline and hold up nothing.
    silent = net.createServer((socket) => {
      silentSockets.add(socket);
      socket.on('close', () => silentSockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as net.AddressInfo).port;

    dir = await group.tempDir('iop-discovery-e2e-');
    binDir = path.join(dir, 'bin');
    await mkdir(binDir);
    for (const [name, version] of [
      ['claude', '2.0.14 (Claude Code)'],
      ['codex', 'codex-cli 0.46.0'],
    ]) {
      const file = path.join(binDir, name);
      // Answers --version only; anything else would be a discovery bug, so it says so and fails.
      await writeFile(
        file,
        `#!/bin/sh\nif [ "$1" = "--version" ]; then echo '${version}'; exit 0; fi\necho "unexpected: $*" >&2\nexit 9\n`,
      );
      await chmod(file, 0o755);
    }
    configPath = path.join(dir, 'edge.yaml');
    await writeFile(
      configPath,
      [
        COMMENT,
        'edge:',
        '  id: edge-discovery-e2e',
        '  listen: 127.0.0.1:0',
        `  data_dir: ${JSON.stringify(path.join(dir, 'data'))}`,
        '  register_timeout_ms: 1000',
        '  heartbeat_interval_ms: 500',
        '  heartbeat_timeout_ms: 3000',
        'logging: { level: info, format: json }',
        'metrics: { enabled: true, listen: 127.0.0.1:0 }',
        'refresh: { enabled: true, listen: 127.0.0.1:0 }',
        'bootstrap: { listen: 127.0.0.1:0 }',
        'openai: { enabled: true, listen: 127.0.0.1:0, timeout_sec: 60 }',
        'a2a: { enabled: false }',
        'models: []',
        'nodes:',
        '  - id: n1',
        `    token: ${TOKEN}`,
        '    runtime: { max_concurrency: 8, health_probe_interval_ms: 0 }',
        '    discovery:',
        `      openai_compat_urls: ['${vllm.url}', 'http://127.0.0.1:${silentPort}/v1']`,
        '      local_ports: [] # the usual ports are left alone: this host may run anything there',
        '',
      ].join('\n'),
    );
    edge = await startEdgeWithConfigFile(group, dir, configPath);
    admin = edge.addresses.admin;
    openai = edge.addresses.openai;
    metrics = edge.addresses.metrics;
    nodeStartedAt = Date.now();
    node = startNodeProcess(group, {
      edge: edge.addresses.transport,
      nodeId: 'n1',
      token: TOKEN,
      dataDir: path.join(dir, 'node-data'),
      env: {
        OLLAMA_HOST: ollama.url.replace(/^http:\/\//, ''),
        PATH: `${binDir}${path.delimiter}${process.env['PATH'] ?? ''}`,
      },
    });
  }, 60_000);

  afterAll(async () => {
    await group.close();
    for (const socket of silentSockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await ollama.close();
    await vllm.close();
  });

  function nodeLog(message: string): Record<string, unknown> | undefined {
    return node.logRecords().find((record) => record['msg'] === message);
  }

  it('registers at once and reports discovery after the hanging probe gave up', async () => {
    await waitUntil(
      () => nodeLog('node ready') !== undefined,
      20_000,
      () => `node ready\n${node.describe()}`,
    );
    await waitUntil(
      () => nodeLog('discovery reported') !== undefined,
      20_000,
      () => `discovery report\n${node.describe()}`,
    );
    const ready = Number(nodeLog('node ready')?.['time']);
    const reported = nodeLog('discovery reported');
    // The pass waited for the silent server's deadline (not longer), and registration did not wait for the pass.
    expect(Number(reported?.['tookMs'])).toBeGreaterThanOrEqual(HTTP_PROBE_TIMEOUT_MS - 50);
    // Bounded by the slowest deadline (a CLI's 3 s --version), with room for a loaded machine.
    expect(Number(reported?.['tookMs'])).toBeLessThan(6000);
    expect(Number(reported?.['time']) - ready).toBeGreaterThanOrEqual(HTTP_PROBE_TIMEOUT_MS - 200);
    expect(ready - nodeStartedAt).toBeLessThan(20_000);
  }, 40_000);

  it('nodes list shows the four discoveries with their models and versions', async () => {
    const listed = await runEdgeCommand(group, ['nodes', 'list', '--json', '--addr', admin]);
    expect(listed.status.code).toBe(0);
    const nodes = (JSON.parse(listed.stdout) as { nodes: { node_id: string; discovered: DiscoveredJson }[] })
      .nodes;
    const discovered = nodes.find((entry) => entry.node_id === 'n1')?.discovered;
    expect(discovered?.backends).toEqual([
      expect.objectContaining({ kind: 'ollama', base_url: ollama.url, models: [...OLLAMA_MODELS].sort() }),
      expect.objectContaining({ kind: 'vllm', base_url: `${vllm.url}/v1`, models: [VLLM_MODEL] }),
    ]);
    expect(discovered?.clis).toEqual(
      expect.arrayContaining([
        { name: 'claude', path: path.join(binDir, 'claude'), version: '2.0.14 (Claude Code)' },
        { name: 'codex', path: path.join(binDir, 'codex'), version: 'codex-cli 0.46.0' },
      ]),
    );
    expect(discovered?.host.cpu_cores).toBeGreaterThan(0);
    const table = await runEdgeCommand(group, ['nodes', 'list', '--addr', admin]);
    expect(table.stdout).toMatch(/ollama: 2 models · vllm: 1 model · .*claude 2\.0\.14.*codex 0\.46\.0/);
    const samples = await scrapeMetrics(metrics);
    expect(metricSum(samples, 'iop_node_discovered_models', { node: 'n1', kind: 'ollama' })).toBe(2);
    expect(metricSum(samples, 'iop_node_discovered_clis', { node: 'n1', cli: 'codex' })).toBe(1);
  }, 40_000);

  it('the admin API runs a fresh discovery pass on request (NodeCommand discover)', async () => {
    const passes = () => node.logRecords().filter((record) => record['msg'] === 'discovery reported').length;
    const before = passes();
    const client = createAdminClient({ address: admin, timeoutMs: 20_000 }, systemClock);
    try {
      const response = await client.nodeCommand('n1', create.nodeCommandRequest({ command: 'discover' }));
      expect(response).toMatchObject({
        ok: true,
        result: { backends: 'ollama,vllm', models: '3', reported: 'true' },
      });
      expect(response.result['clis']?.split(',')).toEqual(expect.arrayContaining(['claude', 'codex']));
    } finally {
      client.close();
    }
    await waitUntil(() => passes() > before, 5000, 'the forced pass in the node log');
  }, 40_000);

  it('node adopt --dry-run prints the entries and changes nothing', async () => {
    const before = await readFile(configPath, 'utf8');
    const dryRun = await runEdgeCommand(group, [
      'node',
      'adopt',
      'n1',
      '--dry-run',
      '--addr',
      admin,
      '--config',
      configPath,
    ]);
    expect(dryRun.status.code).toBe(0);
    for (const expected of [
      'name: ollama',
      `base_url: ${ollama.url}`,
      'name: vllm',
      `base_url: ${vllm.url}/v1`,
      'name: agents',
      'id: n1-ollama',
      'id: n1-vllm',
      'id: n1-agents',
      'id: qwen3:8b',
      `id: ${VLLM_MODEL}`,
      'id: claude',
      'id: codex',
    ]) {
      expect(dryRun.stdout).toContain(expected);
    }
    expect(await readFile(configPath, 'utf8')).toBe(before);
  }, 40_000);

  it('node adopt writes edge.yaml, applies it live, and the discovered models answer through the pool', async () => {
    const edgePid = edge.child.pid;
    const nodePid = node.child.pid;
    const adopted = await runEdgeCommand(group, [
      'node',
      'adopt',
      'n1',
      '--addr',
      admin,
      '--config',
      configPath,
    ]);
    expect({ code: adopted.status.code, stderr: adopted.stderr }).toEqual({ code: 0, stderr: '' });
    expect(adopted.stdout).toContain('applied live (no restart needed)');
    expect(adopted.stdout).toMatch(/n1 applied/);
    const written = await readFile(configPath, 'utf8');
    expect(written.startsWith(`${COMMENT}\n`)).toBe(true);
    expect(written).toContain('# the usual ports are left alone');

    for (const model of ['llama3.2:latest', VLLM_MODEL]) {
      const response = await fetch(
        `${openai.startsWith('http') ? openai : `http://${openai}`}/v1/chat/completions`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            messages: [{ role: 'user', content: 'alpha beta' }],
            max_tokens: 20,
          }),
        },
      );
      const body = (await response.json()) as { choices?: { message: { content: string } }[] };
      expect({ model, status: response.status }).toEqual({ model, status: 200 });
      expect(body.choices?.[0]?.message.content.length).toBeGreaterThan(0);
      expect(response.headers.get('x-iop-provider')).toBe(model === VLLM_MODEL ? 'n1-vllm' : 'n1-ollama');
    }
    expect(ollama.requests.some((request) => request.path === '/api/chat')).toBe(true);
    expect(vllm.requests.some((request) => request.path === '/v1/chat/completions')).toBe(true);
    // Neither process restarted.
    expect([edge.running, node.running, edge.child.pid, node.child.pid]).toEqual([
      true,
      true,
      edgePid,
      nodePid,
    ]);
  }, 60_000);
});
