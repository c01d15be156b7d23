import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { EdgeRuntime } from '../edge-runtime.js';
import { silentLogger } from '../logging.js';
import type { SurfaceFactory } from '../surface.js';
import { connectFakeNode, waitUntil } from '../transport/test-support/fake-node.js';
import { memoryIo } from './test-support/memory-io.js';
import { createNodeRegisterCommand, nodeFacingAddress } from './node-register.js';
import { createServeCommand } from './serve.js';
import { runCli } from './run-cli.js';

const CONFIG = `
edge:
  id: edge-cli-test
  listen: "127.0.0.1:0"
  data_dir: ./data
  register_timeout_ms: 2000
  heartbeat_interval_ms: 1000
  heartbeat_timeout_ms: 3000
logging: { level: silent, format: json }
metrics: { enabled: false }
refresh: { enabled: false }
openai: { enabled: false }
a2a: { enabled: false }
console: { node: "", adapter: cli, target: fake-cli, session_id: default }
nodes:
  - id: test-node
    alias: test-node
    runtime: { max_concurrency: 4 }
    adapters:
      cli:
        enabled: true
        profiles:
          fake-cli: { command: bin/iop-fake-cli, persistent: true, mode: persistent, idle_timeout_ms: 1500 }
`;

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'iop-serve-'));
  await writeFile(path.join(dir, 'edge.yaml'), CONFIG);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('iop-edge node register', () => {
  it('prints the token once with the start command, and rotates on a second call', async () => {
    const command = createNodeRegisterCommand();
    const first = memoryIo(dir);
    expect(
      await runCli(['node', 'register', 'test-node', '--config', 'edge.yaml'], first.io, [command]),
    ).toBe(0);
    const token = /Token .*: (iop_\S+)/.exec(first.out())?.[1] ?? '';
    expect(token).toMatch(/^iop_[A-Za-z0-9_-]{43}$/);
    expect(first.out()).toContain('Registered node test-node.');
    expect(first.out()).toContain(
      `IOP_NODE_TOKEN=${token} iop-node run --edge 127.0.0.1:0 --node-id test-node`,
    );
    expect(first.out()).toContain('--token-file ~/.iop/node/token');
    expect(first.out()).not.toContain('Note:');

    const second = memoryIo(dir);
    expect(
      await runCli(['node', 'register', 'test-node', '--json', '-c', 'edge.yaml'], second.io, [command]),
    ).toBe(0);
    const json = JSON.parse(second.out()) as Record<string, unknown>;
    expect(json).toMatchObject({
      node_id: 'test-node',
      edge_address: '127.0.0.1:0',
      command: 'iop-node run --edge 127.0.0.1:0 --node-id test-node',
      rotated: true,
      configured: true,
    });
    expect(json['token']).not.toBe(token);
  });

  it('warns about a node absent from config and rejects bad ids and missing arguments', async () => {
    const command = createNodeRegisterCommand();
    const extra = memoryIo(dir);
    expect(await runCli(['node', 'register', 'other', '--config', 'edge.yaml'], extra.io, [command])).toBe(0);
    expect(extra.out()).toContain('Note: other is not under nodes[]');
    const bad = memoryIo(dir);
    expect(await runCli(['node', 'register', '../x', '--config', 'edge.yaml'], bad.io, [command])).toBe(2);
    expect(bad.err()).toContain("invalid node id '../x'");
    const missing = memoryIo(dir);
    expect(await runCli(['node', 'register', '--config', 'edge.yaml'], missing.io, [command])).toBe(2);
    expect(missing.err()).toContain('a node id is required');
  });

  it('replaces a wildcard listen host with the public URL host or a real interface address', () => {
    const base = {
      edge: { listen: '0.0.0.0:19090' },
      bootstrap: { public_url: '' },
    } as unknown as Parameters<typeof nodeFacingAddress>[0];
    const interfaces = () =>
      ({
        lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }],
        eth0: [{ address: '192.0.2.7', family: 'IPv4', internal: false }],
      }) as unknown as ReturnType<typeof os.networkInterfaces>;
    expect(nodeFacingAddress(base, interfaces)).toBe('192.0.2.7:19090');
    expect(
      nodeFacingAddress(
        { ...base, bootstrap: { public_url: 'http://edge.example:19091' } } as typeof base,
        interfaces,
      ),
    ).toBe('edge.example:19090');
    expect(nodeFacingAddress({ ...base, edge: { listen: '10.0.0.1:1' } } as typeof base, interfaces)).toBe(
      '10.0.0.1:1',
    );
  });
});

describe('iop-edge serve', () => {
  it('exits 1 listing every config issue when the config is invalid', async () => {
    await writeFile(path.join(dir, 'bad.yaml'), 'edge: { listen: 5, heartbeat_interval_ms: -1 }\nnodes: 7\n');
    const { io, err } = memoryIo(dir);
    const code = await runCli(['serve', '--config', 'bad.yaml'], io, [
      createServeCommand({ signals: () => () => undefined }),
    ]);
    expect(code).toBe(1);
    expect(err()).toMatch(/bad\.yaml: \d+ problems?/);
    expect(err()).toContain('edge.listen');
  });

  it('serves nodes and surfaces until a signal, then says goodbye shutdown to nodes and closes surfaces', async () => {
    let sendSignal: (signal: string) => void = () => undefined;
    let runtime: EdgeRuntime | undefined;
    const closed: string[] = [];
    const fakeSurface: SurfaceFactory = (context) =>
      Promise.resolve({
        name: 'fake',
        address: `fake://${context.config.edge.id}`,
        close: () => {
          closed.push('fake');
          return Promise.resolve();
        },
      });
    const disabledSurface: SurfaceFactory = () => Promise.resolve(undefined);
    const register = memoryIo(dir);
    await runCli(['node', 'register', 'test-node', '--json', '-c', 'edge.yaml'], register.io, [
      createNodeRegisterCommand(),
    ]);
    const token = (JSON.parse(register.out()) as { token: string }).token;

    const { io, out } = memoryIo(dir);
    const serving = runCli(['serve', '--config', 'edge.yaml'], io, [
      createServeCommand({
        signals: (handler) => {
          sendSignal = handler;
          return () => undefined;
        },
        surfaces: [fakeSurface, disabledSurface],
        createLogger: () => silentLogger,
        onStarted: (started) => (runtime = started),
      }),
    ]);
    await waitUntil(() => runtime !== undefined, 5000, 'runtime started');
    const address = runtime?.transportAddress ?? '';
    expect(out()).toContain(`node transport  ${address}`);
    expect(out()).toContain('fake            fake://edge-cli-test');
    const node = await connectFakeNode(address, { nodeId: 'test-node', token });
    expect(node.response.accepted).toBe(true);
    // A node registered while the edge runs is accepted without a restart.
    const late = memoryIo(dir);
    await runCli(['node', 'register', 'late-node', '--json', '-c', 'edge.yaml'], late.io, [
      createNodeRegisterCommand(),
    ]);
    const lateNode = await connectFakeNode(address, {
      nodeId: 'late-node',
      token: (JSON.parse(late.out()) as { token: string }).token,
    });
    expect(lateNode.response.accepted).toBe(true);
    sendSignal('SIGTERM');
    expect(await serving).toBe(0);
    expect((await node.connection.closed).reason).toBe('shutdown');
    expect(closed).toEqual(['fake']);
    expect(out()).toContain('iop-edge stopped');
    expect(runtime?.registry.size).toBe(0);
  });
});
