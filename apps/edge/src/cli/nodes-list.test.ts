import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startAdminServer, type AdminSurface } from '../admin/admin-server.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { silentLogger } from '../logging.js';
import { createAdminClient } from '../admin/admin-client.js';
import { systemClock } from '../clock.js';
import { memoryIo } from './test-support/memory-io.js';
import { createNodesListCommand } from './nodes-list.js';
import { runCli } from './run-cli.js';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 30);
const command = createNodesListCommand({
  createClient: (options) => createAdminClient({ ...options, timeoutMs: 3000 }, systemClock),
  now: () => NOW,
});

const IDENTITY = `sha256:0123456789ab${'c'.repeat(52)}`;

describe('iop-edge nodes list', () => {
  let dir: string;
  let surface: AdminSurface | undefined;
  let service: FakeEdgeService;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-nodes-list-'));
    service = FakeEdgeService.forConsole();
    service.nodes = [
      {
        ...node('test-node', 'alias-a', Date.UTC(2026, 10, 29, 12)),
        lastHeartbeatUnixMs: NOW - 2000,
        identityFingerprint: IDENTITY,
      },
    ];
  });

  afterEach(async () => {
    await surface?.close();
    surface = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  async function serve(token = ''): Promise<string> {
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      token,
      service,
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
    });
    return surface.address;
  }

  it('prints a table of connected nodes from the address in the config', async () => {
    const address = await serve();
    await writeFile(path.join(dir, 'edge.yaml'), `refresh: { listen: "${address}" }\n`);
    const { io, out, err } = memoryIo(dir);
    expect(await runCli(['nodes', 'list'], io, [command])).toBe(0);
    expect(err()).toBe('');
    expect(out().split('\n')).toEqual([
      'NODE       ALIAS    VERSION  PLATFORM   HOST            ADDRESS          CONNECTED             HEARTBEAT  ADAPTERS  IDENTITY              DISCOVERED',
      'test-node  alias-a  0.1.0    linux/x64  test-node-host  127.0.0.1:50000  2026-11-29T12:00:00Z  2s ago     cli       sha256:0123456789ab…  not reported',
      '',
    ]);
  });

  it('prints JSON with --json and --addr, sending the configured token', async () => {
    const agentRun = {
      runId: 'run-agent',
      nodeId: 'test-node',
      principal: 'key-a',
      model: 'coder',
      liveChildren: 2,
      children: 5,
      tokens: 40,
      childTokens: 1200,
    };
    // Agent runs with their model calls, each under its node.
    service.agentRunList = [agentRun, { ...agentRun, runId: 'run-elsewhere', nodeId: 'other-node' }];
    const address = await serve('s3cret');
    await writeFile(
      path.join(dir, 'edge.yaml'),
      'refresh: { listen: "127.0.0.1:1", admin_token: "s3cret" }\n',
    );
    const { io, out } = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--json', '--addr', address], io, [command])).toBe(0);
    expect(JSON.parse(out())).toEqual({
      nodes: [
        {
          node_id: 'test-node',
          alias: 'alias-a',
          agent_version: '0.1.0',
          os: 'linux',
          arch: 'x64',
          hostname: 'test-node-host',
          remote_address: '127.0.0.1:50000',
          connected_since: '2026-11-29T12:00:00Z',
          connected_since_unix_ms: Date.UTC(2026, 10, 29, 12),
          last_heartbeat: '2026-11-29T12:00:28Z',
          last_heartbeat_unix_ms: NOW - 2000,
          adapters: ['cli'],
          discovered: null,
          identity_fingerprint: IDENTITY,
          providers: [],
          agent_runs: [
            {
              run_id: 'run-agent',
              principal: 'key-a',
              model: 'coder',
              live_children: 2,
              children: 5,
              tokens: 40,
              child_tokens: 1200,
            },
          ],
        },
      ],
    });
  });

  it('shows what each node discovered: a summary line in the table, the whole object with --json', async () => {
    const GIB = 1024 ** 3;
    service.nodes = [
      {
        ...node('test-node', 'alias-a', Date.UTC(2026, 10, 29, 12)),
        lastHeartbeatUnixMs: NOW - 2000,
        discovered: {
          backends: [
            {
              kind: 'ollama',
              baseUrl: 'http://127.0.0.1:11434',
              models: ['gemma3:4b', 'llama3.2:3b', 'qwen3:8b'],
              version: '0.12.6',
              loadedModels: [],
            },
          ],
          clis: [
            { name: 'claude', path: '/usr/local/bin/claude', version: '2.0.14 (Claude Code)' },
            { name: 'codex', path: '/usr/bin/codex', version: '' },
          ],
          host: {
            os: 'linux',
            arch: 'x64',
            cpuCores: 16,
            memoryBytes: 64 * GIB,
            gpus: [{ name: 'NVIDIA GeForce RTX 4090', memoryBytes: 24 * GIB, vendor: 'nvidia' }],
            agentsSeparateUser: false,
            agentUser: '',
            agentWorkspaceRoot: '',
          },
          discoveredAtUnixMs: NOW,
        },
      },
    ];
    const address = await serve();
    let run = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--addr', address], run.io, [command])).toBe(0);
    expect(run.out().split('\n')[1]).toMatch(
      / cli {7}- {9}ollama: 3 models · claude 2\.0\.14 · codex · 1× GPU 24 GB · agents share node user$/,
    );
    run = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--json', '--addr', address], run.io, [command])).toBe(0);
    const listed = JSON.parse(run.out()) as { nodes: { discovered: unknown }[] };
    expect(listed.nodes[0]?.discovered).toEqual({
      backends: [
        {
          kind: 'ollama',
          base_url: 'http://127.0.0.1:11434',
          models: ['gemma3:4b', 'llama3.2:3b', 'qwen3:8b'],
          loaded_models: [],
          version: '0.12.6',
        },
      ],
      clis: [
        { name: 'claude', path: '/usr/local/bin/claude', version: '2.0.14 (Claude Code)' },
        { name: 'codex', path: '/usr/bin/codex', version: '' },
      ],
      host: {
        os: 'linux',
        arch: 'x64',
        cpu_cores: 16,
        memory_bytes: 64 * GIB,
        gpus: [{ name: 'NVIDIA GeForce RTX 4090', vendor: 'nvidia', memory_bytes: 24 * GIB }],
        agents_share_node_user: true,
        agent_user: '',
        agent_workspace_root: '',
      },
      discovered_at: new Date(NOW).toISOString(),
    });
  });

  it('prints no terminal escape sequence a node put in its version, host name or discovery strings', async () => {
    const ESC = '\u001b';
    service.nodes = [
      {
        ...node('test-node', 'alias-a', Date.UTC(2026, 10, 29, 12)),
        agentVersion: `0.1.0${ESC}]0;owned${ESC}\\`,
        hostname: `host${ESC}[2J${ESC}[H\r`,
        discovered: {
          backends: [],
          clis: [
            {
              name: 'codex',
              path: '/usr/bin/codex',
              version: `0.46.0${ESC}]8;;http://evil.example/\u0007x\u009b1A`,
            },
          ],
          host: {
            os: 'linux',
            arch: 'x64',
            cpuCores: 1,
            memoryBytes: 0,
            gpus: [],
            agentsSeparateUser: false,
            agentUser: '',
            agentWorkspaceRoot: '',
          },
          discoveredAtUnixMs: NOW,
        },
      },
    ];
    const address = await serve();
    const run = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--addr', address], run.io, [command])).toBe(0);
    const table = run.out();
    // eslint-disable-next-line no-control-regex -- no control character may be left
    expect(table).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(table).toContain('0.1.0 ');
    expect(table).toContain('host ');
    expect(table).toContain('codex 0.46.0');
  });

  it('says so when no node is connected, and takes the token from the environment', async () => {
    service.nodes = [];
    const address = await serve('env-token');
    const { io, out } = memoryIo(dir, { IOP_EDGE_ADMIN_TOKEN: 'env-token' });
    expect(await runCli(['nodes', 'list', '--addr', address], io, [command])).toBe(0);
    expect(out()).toBe('no nodes connected\n');
  });

  it('fails clearly with a wrong token or an unreachable edge', async () => {
    const address = await serve('right');
    let run = memoryIo(dir, { IOP_EDGE_ADMIN_TOKEN: 'wrong' });
    expect(await runCli(['nodes', 'list', '--addr', address], run.io, [command])).toBe(1);
    expect(run.err()).toMatch(
      /^iop-edge nodes list: the edge admin API at .* rejected the call: missing or invalid admin token \(the CLI sends refresh\.admin_token from the edge's config .*IOP_EDGE_ADMIN_TOKEN\)\n$/,
    );
    await surface?.close();
    run = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--addr', address], run.io, [command])).toBe(1);
    expect(run.err()).toContain(`iop-edge nodes list: cannot reach the edge admin API at ${address}: `);
  });

  it('rejects a bad address and reports an invalid config when it needs it', async () => {
    let run = memoryIo(dir);
    expect(await runCli(['nodes', 'list', '--addr', 'nowhere'], run.io, [command])).toBe(2);
    expect(run.err()).toContain('invalid listen address "nowhere"');
    await writeFile(path.join(dir, 'edge.yaml'), 'refresh: { listen: 5 }\n');
    run = memoryIo(dir);
    expect(await runCli(['nodes', 'list'], run.io, [command])).toBe(1);
    expect(run.err()).toMatch(/refresh\.listen/);
  });
});
