// Cross-process: the trust model end to end, from an operator's first commands to a connected node.
//   iop-edge config init → serve → node register → the printed bash one-liner, run verbatim by bash (clean HOME,
//   no `node` on PATH) → the node installs from the edge's bootstrap server and connects over TLS, pinned.
// Around it: a TCP relay between node and edge (the one-liner's edge address, via bootstrap.edge_address) records
// every byte and must never see the token; a bootstrap proxy in front of the edge's bootstrap server serves a
// tampered install.sh, then a tampered artifact, and the line must stop before running either; rotating the
// token disconnects the connected node within 2 s and its reconnect is rejected as bad_token; pointed (through
// the relay) at an impostor with another key, the installed node exits non-zero without sending its token.
// The node artifact is a stand-in launcher for the TypeScript sources (the release build is `make test-e2e`).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createSelfSignedCertificate } from '../src/tls/self-signed-certificate.js';
import {
  freePort,
  ProcessGroup,
  repoRoot,
  runEdgeCommand,
  waitUntil,
  type TestProcess,
} from './support/e2e-processes.js';

const registerHooks = path.join(repoRoot, 'apps/node/test/support/register-ts.mjs');
const nodeMain = path.join(repoRoot, 'apps/node/src/main.ts');
const edgeMain = path.join(repoRoot, 'apps/edge/src/main.ts');
const VERSION = '0.0.0-e2e';

/** A TCP relay that forwards to a switchable target and keeps every byte the client sent. */
class Relay {
  readonly fromClient: Buffer[] = [];
  target = 0;
  private readonly sockets = new Set<net.Socket>();
  private readonly server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: this.target });
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    }
    client.on('data', (chunk: Buffer) => this.fromClient.push(chunk));
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  /** Listens on a port of the system's choosing (no pick-then-bind race with other suites); resolves with it. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port));
    });
  }
  captured(): Buffer {
    return Buffer.concat(this.fromClient);
  }
  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

type ProxyMode = 'pass' | 'tamper-script' | 'tamper-artifact';

/** The bootstrap URL the edge advertises: forwards to the real bootstrap server, or tampers with what it sends. */
function startBootstrapProxy(
  port: number,
  upstreamPort: number,
  mode: () => ProxyMode,
): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const upstream = http.get(
      { host: '127.0.0.1', port: upstreamPort, path: request.url, agent: false },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          let body = Buffer.concat(chunks);
          if (mode() === 'tamper-script' && request.url === '/install.sh')
            body = Buffer.concat([body, Buffer.from('\ntouch "$HOME/pwned"\n')]);
          if (mode() === 'tamper-artifact' && request.url?.startsWith('/artifacts/iop-node-'))
            body = Buffer.concat([body, Buffer.from('appended by an attacker')]);
          response.writeHead(answer.statusCode ?? 502, { 'content-length': body.length });
          response.end(body);
        });
      },
    );
    upstream.on('error', () => response.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** A bin dir with the tools the one-liner and install.sh use, and no `node`. */
function toolsWithoutNode(dir: string): string {
  const bin = path.join(dir, 'tools');
  fs.mkdirSync(bin);
  const tools = [
    'bash',
    'sh',
    'curl',
    'mktemp',
    'sha256sum',
    'shasum',
    'grep',
    'rm',
    'tar',
    'gzip',
    'awk',
    'uname',
    'id',
    'mkdir',
    'chmod',
    'mv',
    'ln',
    'head',
    'env',
    'cat',
    'sed',
    'dirname',
    'basename',
    'tr',
    'cut',
    'ls',
    'touch',
  ];
  for (const tool of tools) {
    const found = execFileSync('sh', ['-c', `command -v ${tool} || true`], { encoding: 'utf8' }).trim();
    if (found.startsWith('/')) fs.symlinkSync(found, path.join(bin, tool));
  }
  return bin;
}

/** iop-node-<version>-<os>-<arch>.tar.gz whose bin/iop-node runs the node from the TypeScript sources. */
function buildArtifact(artifactDir: string, stageDir: string): string {
  const os = process.platform === 'darwin' ? 'darwin' : 'linux';
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  const folder = `iop-node-${VERSION}-${os}-${arch}`;
  fs.mkdirSync(path.join(stageDir, folder, 'bin'), { recursive: true });
  // An absolute runtime path, like the release artifact's bundled runtime: the host needs no Node.js.
  fs.writeFileSync(
    path.join(stageDir, folder, 'bin', 'iop-node'),
    `#!/bin/sh\nexec '${process.execPath}' --import '${registerHooks}' '${nodeMain}' "$@"\n`,
    { mode: 0o755 },
  );
  const file = `${folder}.tar.gz`;
  fs.mkdirSync(artifactDir, { recursive: true });
  execFileSync('tar', ['-czf', path.join(artifactDir, file), '-C', stageDir, folder]);
  const sha256 = crypto
    .createHash('sha256')
    .update(fs.readFileSync(path.join(artifactDir, file)))
    .digest('hex');
  fs.writeFileSync(path.join(artifactDir, 'SHA256SUMS'), `${sha256}  ${file}\n`);
  return file;
}

interface Shell {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs `line` with bash in its own process group (so the node it execs is killed with it). */
function runLine(line: string, env: NodeJS.ProcessEnv): Shell {
  const child = spawn('/bin/bash', ['-c', line], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

function killGroup(shell: Shell | undefined): void {
  if (shell?.child.pid !== undefined && shell.child.exitCode === null) {
    try {
      process.kill(-shell.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('secure by default: config init → serve → node register → one-liner → pinned TLS link', () => {
  const group = new ProcessGroup();
  const shells: Shell[] = [];
  let dir: string;
  let home: string;
  let edge: TestProcess;
  let relay: Relay;
  let proxy: http.Server;
  let impostor: tls.Server | undefined;
  let mode: ProxyMode = 'pass';
  let configPath: string;
  let env: NodeJS.ProcessEnv;
  let registered: { token: string; install_unix: string; edge_fingerprint: string };
  let transportPort: number;
  let relayPort: number;

  beforeAll(async () => {
    dir = await group.tempDir('iop-secure-e2e-');
    home = path.join(dir, 'home');
    fs.mkdirSync(home);
    // The relay and the bootstrap proxy listen first, on ports of the system's choosing (a port picked now and
    // bound after the edge has started could be taken by another suite meanwhile); the edge's own listeners get
    // ports picked just before it starts.
    transportPort = await freePort();
    const bootstrapPort = await freePort();
    relay = new Relay();
    relay.target = transportPort;
    relayPort = await relay.listen();
    proxy = await startBootstrapProxy(0, bootstrapPort, () => mode);
    const proxyPort = (proxy.address() as net.AddressInfo).port;
    const adminPort = await freePort();
    configPath = path.join(dir, 'edge.yaml');

    const init = await runEdgeCommand(group, [
      'config',
      'init',
      '--path',
      configPath,
      '--public-url',
      `http://127.0.0.1:${proxyPort}`,
    ]);
    expect(init.status.code).toBe(0);
    // Run-time ports for every listener; nodes are told to dial the relay in front of the transport.
    const text = fs
      .readFileSync(configPath, 'utf8')
      .replace(/listen: "0\.0\.0\.0:19090"/, `listen: "127.0.0.1:${transportPort}"`)
      .replace(/listen: "0\.0\.0\.0:19091"/, `listen: "127.0.0.1:${bootstrapPort}"`)
      .replace(/listen: "127\.0\.0\.1:19093"/, `listen: "127.0.0.1:${adminPort}"`)
      .replace(/^(\s*artifact_dir: .*)$/m, `$1\n  edge_address: "127.0.0.1:${relayPort}"`);
    fs.writeFileSync(configPath, text);
    buildArtifact(path.join(dir, 'artifacts'), path.join(dir, 'stage'));

    edge = group.spawnTs('edge', edgeMain, ['serve', '--config', configPath], {}, dir);
    await waitUntil(
      () => /^ {2}bootstrap\s+\S+/m.test(edge.stdout()) || !edge.running,
      30_000,
      () => `edge listening lines\n${edge.describe()}`,
    );
    expect(edge.running).toBe(true);

    const register = await runEdgeCommand(group, [
      'node',
      'register',
      'node-1',
      '--json',
      '--config',
      configPath,
    ]);
    expect(register.status.code).toBe(0);
    registered = JSON.parse(register.stdout) as typeof registered;
    env = { HOME: home, PATH: toolsWithoutNode(dir), IOP_HOME: path.join(home, '.iop'), LANG: 'C' };
    expect(
      execFileSync('/bin/sh', ['-c', 'command -v node || echo none'], { env, encoding: 'utf8' }).trim(),
    ).toBe('none');
  }, 90_000);

  afterAll(async () => {
    for (const shell of shells) killGroup(shell);
    await relay?.close();
    await new Promise((resolve) => proxy?.close(resolve));
    await new Promise((resolve) => (impostor ? impostor.close(resolve) : resolve(undefined)));
    await group.close();
  });

  it('serves the edge over TLS with a pinned key and says nothing about plaintext', () => {
    expect(edge.stdout()).toMatch(/node transport {2}127\.0\.0\.1:\d+ \(tls\)/);
    expect(edge.stderr()).not.toContain('edge.tls is off');
    expect(registered.edge_fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(registered.install_unix).toContain(`--edge '127.0.0.1:${relayPort}'`);
    expect(registered.install_unix).toContain(`--edge-fingerprint '${registered.edge_fingerprint}'`);
  });

  it('stops before running a tampered install.sh', async () => {
    mode = 'tamper-script';
    const shell = runLine(registered.install_unix, env);
    shells.push(shell);
    expect(await within(shell.exited, 20_000, 'tampered install.sh run')).toBe(1);
    expect(shell.output()).toContain(
      'install.sh does not match the SHA-256 pinned in this line; not running it',
    );
    expect(fs.existsSync(path.join(home, 'pwned'))).toBe(false);
    expect(fs.existsSync(path.join(home, '.iop'))).toBe(false);
  });

  it('stops before installing a tampered artifact', async () => {
    mode = 'tamper-artifact';
    const shell = runLine(registered.install_unix, env);
    shells.push(shell);
    expect(await within(shell.exited, 20_000, 'tampered artifact run')).toBe(1);
    expect(shell.output()).toMatch(
      /checksum mismatch for iop-node-.*: expected [0-9a-f]{64}, got [0-9a-f]{64}/,
    );
    expect(fs.existsSync(path.join(home, '.iop', 'versions'))).toBe(false);
    expect(fs.existsSync(path.join(home, '.iop', 'node.token'))).toBe(false);
  });

  let node: Shell;

  it('runs the printed one-liner verbatim: the node installs and connects over TLS; the relay sees no token', async () => {
    mode = 'pass';
    node = runLine(registered.install_unix, env);
    shells.push(node);
    await waitUntil(
      () =>
        edge
          .logRecords()
          .some((record) => record['msg'] === 'node registered' && record['nodeId'] === 'node-1'),
      45_000,
      () => `node-1 registered\n${node.output().slice(-3000)}\n${edge.describe()}`,
    );
    expect(node.output()).toContain('SHA-256 verified');
    const captured = relay.captured();
    expect(captured.length).toBeGreaterThan(0);
    expect(captured[0]).toBe(0x16); // a TLS handshake record, not a length-prefixed protobuf frame
    expect(captured.includes(Buffer.from(registered.token))).toBe(false);
    expect(captured.includes(Buffer.from(registered.token.slice(4, 24)))).toBe(false);
  }, 60_000);

  it('rotating the token disconnects the node within 2 s; its reconnect is rejected as bad_token', async () => {
    const started = Date.now();
    const rotate = await runEdgeCommand(group, [
      'node',
      'register',
      'node-1',
      '--json',
      '--config',
      configPath,
    ]);
    expect(rotate.status.code).toBe(0);
    // From the moment the new store file landed to the edge's disconnect log line (same clock).
    const writtenAt = fs.statSync(path.join(dir, 'data', 'nodes.json')).mtimeMs;
    const revoked = () =>
      edge
        .logRecords()
        .find((record) => record['msg'] === 'node disconnected' && record['reason'] === 'token-revoked');
    await waitUntil(
      () => revoked() !== undefined,
      5_000,
      () => `token-revoked disconnect\n${edge.describe()}`,
    );
    const disconnectedAfterMs = Number(revoked()?.['time']) - writtenAt;
    expect(disconnectedAfterMs).toBeLessThan(2_000);
    const code = await within(node.exited, 30_000, 'node exit after rotation');
    expect(code).toBe(1);
    expect(node.output()).toMatch(/edge rejected the registration: .* \(bad_token\)/);
    expect(Date.now() - started).toBeLessThan(40_000);
  }, 45_000);

  it('pointed through the relay at an edge with another key, the node refuses and exits non-zero without sending its token', async () => {
    const other = createSelfSignedCertificate({ commonName: 'impostor', hosts: ['127.0.0.1'] });
    const received: Buffer[] = [];
    impostor = tls.createServer({ cert: other.certificatePem, key: other.privateKeyPem }, (socket) => {
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => impostor!.listen(0, '127.0.0.1', resolve));
    relay.target = (impostor.address() as net.AddressInfo).port;
    relay.fromClient.length = 0;
    const root = path.join(home, '.iop');
    const shell = runLine(
      `exec "$IOP_HOME/bin/iop-node" run --edge 127.0.0.1:${relayPort} --node-id node-1 ` +
        `--token-file "$IOP_HOME/node.token" --data-dir "$IOP_HOME/node" --edge-fingerprint ${registered.edge_fingerprint}`,
      env,
    );
    shells.push(shell);
    expect(await within(shell.exited, 30_000, 'node against the impostor')).toBe(1);
    expect(shell.output()).toContain(
      `expected ${registered.edge_fingerprint}, it presented ${other.fingerprint}`,
    );
    expect(Buffer.concat(received).length).toBe(0);
    const token = fs.readFileSync(path.join(root, 'node.token'), 'utf8').trim();
    expect(relay.captured().includes(Buffer.from(token))).toBe(false);
  }, 40_000);
});
