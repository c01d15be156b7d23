import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { RegisterRejectCode } from '@iop/wire';
import { FakeEdge, waitFor } from '../link/test-support/fake-edge.js';
import { silentLogger } from '@iop/logging';
import { adapterInstance, fakeFactory } from '../runner/test-support/fake-adapter.js';
import { runCli } from './run-cli.js';
import { createRunCommand } from './run-command.js';
import { memoryIo } from './test-support/memory-io.js';

describe('iop-node run', () => {
  let dir: string;
  let edge: FakeEdge | undefined;
  const factory = fakeFactory('cli');
  const command = createRunCommand({ factories: () => ({ cli: factory }), logger: () => silentLogger });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-run-cmd-'));
  });
  afterEach(async () => {
    await edge?.close();
    edge = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('registers with the token from --token-file and exits 0 after a signal, saying goodbye', async () => {
    edge = await FakeEdge.start({
      answer: () => ({
        accepted: true,
        config: {
          nodeId: 'n1',
          alias: '',
          maxConcurrency: 2,
          adapters: [adapterInstance('cli', 'cli')],
          providers: [],
          revision: 'r',
          healthProbeIntervalMs: 0,
        },
      }),
    });
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, 'file-token\n', { mode: 0o600 });
    const io = memoryIo({ IOP_NODE_TOKEN: 'env-token' }, dir);
    const exit = runCli(
      [
        'run',
        '--edge',
        `127.0.0.1:${edge.port}`,
        '--node-id',
        'n1',
        '--token-file',
        'token',
        '--data-dir',
        'data',
      ],
      io,
      [command],
    );
    await waitFor(() => edge!.registrations.length === 1 && io.subscribers() === 1, 5000, 'registration');
    expect(edge.registrations[0]).toMatchObject({ nodeId: 'n1', token: 'file-token', agentVersion: '0.1.0' });
    expect(fs.existsSync(path.join(dir, 'data', 'node.lock'))).toBe(true);
    io.signal('SIGTERM');
    expect(await exit).toBe(0);
    expect(edge.kinds()).toContain('goodbye');
    expect(io.subscribers()).toBe(0);
    expect(fs.existsSync(path.join(dir, 'data', 'node.lock'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'data', 'history.db'))).toBe(true);
  });

  it("exits 1 printing the edge's reason when the registration is rejected (token from IOP_NODE_TOKEN)", async () => {
    edge = await FakeEdge.start({
      answer: () => ({
        accepted: false,
        rejectCode: RegisterRejectCode.REGISTER_REJECT_CODE_UNKNOWN_NODE,
        reason: "node 'n2' is not registered on this edge",
      }),
    });
    const io = memoryIo({ IOP_NODE_TOKEN: 'env-token' }, dir);
    const code = await runCli(
      ['run', '--edge', `127.0.0.1:${edge.port}`, '--node-id', 'n2', '--data-dir', 'd'],
      io,
      [command],
    );
    expect(code).toBe(1);
    expect(edge.registrations[0].token).toBe('env-token');
    expect(io.err()).toContain(
      "edge rejected the registration: node 'n2' is not registered on this edge (unknown_node)",
    );
  });

  it.each([
    [['--token', 'x'], '--token is refused'],
    [['--token=x'], '--token is refused'],
    [[], 'no token'],
    [['--retry-interval-ms', 'soon'], '--retry-interval-ms must be an integer'],
    [['--image-fetch-allow', '127.0.0.1,localhost'], "--image-fetch-allow: 'localhost' is not an IP address"],
  ])('refuses %j with a usage error', async (extra, message) => {
    const io = memoryIo({}, dir);
    const code = await runCli(
      ['run', '--edge', '127.0.0.1:1', '--node-id', 'n', '--data-dir', 'd', ...extra],
      io,
      [command],
    );
    expect(code).toBe(2);
    expect(io.err()).toContain(message);
  });

  it('requires --edge HOST:PORT and --node-id', async () => {
    const io = memoryIo({ IOP_NODE_TOKEN: 't' }, dir);
    expect(await runCli(['run', '--node-id', 'n'], io, [command])).toBe(2);
    expect(await runCli(['run', '--edge', 'nowhere', '--node-id', 'n'], io, [command])).toBe(2);
    expect(await runCli(['run', '--edge', '127.0.0.1:9'], io, [command])).toBe(2);
    expect(io.err()).toContain('--edge HOST:PORT is required');
    expect(io.err()).toContain("edge address 'nowhere' is not HOST:PORT");
    expect(io.err()).toContain('--node-id ID is required');
  });

  it('refuses an --edge-fingerprint that is not sha256:<64 hex>', async () => {
    const io = memoryIo({ IOP_NODE_TOKEN: 't' }, dir);
    const argv = ['run', '--edge', '127.0.0.1:9', '--node-id', 'n', '--edge-fingerprint', 'sha1:abcd'];
    expect(await runCli(argv, io, [command])).toBe(2);
    expect(io.err()).toContain("--edge-fingerprint must be sha256:<64 hex digits>, got 'sha1:abcd'");
  });

  it('with --edge-fingerprint, exits 1 against a plaintext edge without registering', async () => {
    edge = await FakeEdge.start();
    const io = memoryIo({ IOP_NODE_TOKEN: 'secret-token' }, dir);
    const argv = [
      'run',
      '--edge',
      `127.0.0.1:${edge.port}`,
      '--node-id',
      'n',
      '--data-dir',
      path.join(dir, 'data'),
      '--edge-fingerprint',
      `sha256:${'a'.repeat(64)}`,
      '--max-retries',
      '0',
    ];
    expect(await runCli(argv, io, [command])).toBe(1);
    expect(io.err()).toContain('cannot connect to edge');
    expect(edge.registrations).toHaveLength(0);
    expect(edge.received).toHaveLength(0);
  });

  it('refuses a data dir held by another live agent', async () => {
    const data = path.join(dir, 'd');
    fs.mkdirSync(data);
    // The jest worker's parent is alive and is not this process: a live foreign owner.
    fs.writeFileSync(path.join(data, 'node.lock'), `${process.ppid}\n`);
    const io = memoryIo({ IOP_NODE_TOKEN: 't' }, dir);
    const code = await runCli(['run', '--edge', '127.0.0.1:9', '--node-id', 'n', '--data-dir', 'd'], io, [
      command,
    ]);
    expect(code).toBe(1);
    expect(io.err()).toContain(`in use by another iop-node (pid ${process.ppid})`);
  });
});
