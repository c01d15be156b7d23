// Hostile input and faults against a real edge and real nodes on loopback (issue 15): a 16 MiB frame announced
// before registration, 300 idle sockets on the node port while a real node registers, an unauthenticated 10 MiB
// A2A body, a slowloris connection on every HTTP listener, a prompt that looks like a CLI flag, a workspace outside
// the node's roots, an opencode-style server killed during its start, and a CLI printing one 50 MB line.
import { mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  ProcessGroup,
  metricSum,
  repoRoot,
  scrapeMetrics,
  sleep,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';

jest.setTimeout(120_000);

const TOKEN = 'iop_e2e_hostile_token_0123456789';
const A2A_TOKEN = 'a2a-hostile-secret';
const fakeCli = 'bin/iop-fake-cli';
const replayOpencode = path.join(repoRoot, 'packages/testkit/bin/replay-opencode-serve.mjs');
const opencodeEvents = path.join(repoRoot, 'packages/testkit/transcripts/opencode/serve-turn1-events.jsonl');

const group = new ProcessGroup();
let edge: EdgeProcess;
let node: TestProcess;
let hangMarker: string;

function cliNode(id: string): Record<string, unknown> {
  return {
    id,
    alias: id,
    token: TOKEN,
    runtime: { max_concurrency: 8, health_probe_interval_ms: 0 },
    adapters: {
      instances: [
        {
          name: 'cli',
          type: 'cli',
          enabled: true,
          max_sessions: 8,
          profiles: {
            argv: { command: fakeCli, mode: 'oneshot', args: ['{prompt}'] },
            flood: { command: fakeCli, mode: 'oneshot', args: ['--long-line-bytes', '50000000'] },
            oc: {
              command: replayOpencode,
              mode: 'opencode-sse',
              args: ['--events', opencodeEvents, '--hang-start-once', hangMarker],
            },
          },
        },
      ],
    },
  };
}

function route(model: string, target: string): Record<string, unknown> {
  return { model, adapter: 'cli', target, node: 'n1', workspace_required: false };
}

function address(hostPort: string): { host: string; port: number } {
  const bare = hostPort.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
  const colon = bare.lastIndexOf(':');
  return { host: bare.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(bare.slice(colon + 1)) };
}

function connect(hostPort: string): Promise<net.Socket> {
  const { host, port } = address(hostPort);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host, () => resolve(socket));
    socket.once('error', reject);
  });
}

function closedWithin(socket: net.Socket, timeoutMs: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function residentBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

async function connections(nodeId: string): Promise<number> {
  return metricSum(await scrapeMetrics(edge.addresses.metrics), 'iop_node_connections_total', {
    node: nodeId,
  });
}

async function chat(
  model: string,
  prompt: string,
  metadata?: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(
    `http://${address(edge.addresses.openai).host}:${address(edge.addresses.openai).port}/v1/chat/completions`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: prompt }],
        ...(metadata ? { metadata } : {}),
      }),
    },
  );
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function content(body: Record<string, unknown>): string {
  const choices = body['choices'] as Array<{ message?: { content?: string } }> | undefined;
  return choices?.[0]?.message?.content ?? '';
}

beforeAll(async () => {
  const dir = await group.tempDir('iop-e2e-hostile-');
  hangMarker = path.join(dir, 'opencode-hang.pid');
  // The bootstrap listener starts only when its artifact directory exists.
  const artifacts = path.join(dir, 'artifacts');
  mkdirSync(artifacts);
  edge = await startEdgeProcess(group, dir, {
    edge: {
      id: 'edge-hostile',
      listen: '127.0.0.1:0',
      data_dir: `${dir}/data`,
      register_timeout_ms: 2000,
      heartbeat_interval_ms: 500,
      // A starved event loop on a loaded 2-core machine must not pass for a dead node.
      heartbeat_timeout_ms: 10_000,
    },
    logging: { level: 'info', format: 'json' },
    metrics: { enabled: true, listen: '127.0.0.1:0' },
    refresh: { enabled: true, listen: '127.0.0.1:0' },
    bootstrap: { listen: '127.0.0.1:0', artifact_dir: artifacts },
    openai: {
      enabled: true,
      listen: '127.0.0.1:0',
      timeout_sec: 60,
      model_routes: [route('e2e-argv', 'argv'), route('e2e-flood', 'flood'), route('e2e-oc', 'oc')],
    },
    a2a: {
      enabled: true,
      listen: '127.0.0.1:0',
      path: '/a2a',
      bearer_token: A2A_TOKEN,
      node: 'n1',
      adapter: 'cli',
      target: 'argv',
    },
    models: [],
    nodes: [cliNode('n1'), cliNode('n2')],
  });
  node = startNodeProcess(group, {
    edge: edge.addresses.transport,
    nodeId: 'n1',
    token: TOKEN,
    dataDir: await group.tempDir('iop-e2e-hostile-n1-'),
  });
  await waitUntil(
    async () => (await connections('n1')) === 1,
    30_000,
    () => `n1 registered\n${edge.describe()}`,
  );
}, 60_000);

afterAll(async () => {
  await group.close();
});

describe('hostile input against a real edge and node', () => {
  it('closes a peer announcing a 16 MiB frame before registering; the edge does not buffer it', async () => {
    const pid = edge.child.pid ?? 0;
    const before = residentBytes(pid);
    const sockets: net.Socket[] = [];
    for (let index = 0; index < 8; index += 1) {
      const socket = await connect(edge.addresses.transport);
      socket.on('error', () => undefined);
      socket.resume();
      const header = Buffer.alloc(4);
      header.writeUInt32BE(16 * 1024 * 1024);
      socket.write(header);
      // 2 MiB of body per socket: 16 MiB in all that an unbounded decoder would hold (limit: 64 KiB per frame).
      socket.write(Buffer.alloc(2 * 1024 * 1024, 7));
      sockets.push(socket);
    }
    const closed = await Promise.all(sockets.map((socket) => closedWithin(socket, 5000)));
    expect(closed.every(Boolean)).toBe(true);
    await sleep(200);
    const growth = residentBytes(pid) - before;
    process.stdout.write(`[e2e hostile] edge RSS growth after 8 × 16 MiB announcements: ${growth} bytes\n`);
    expect(growth).toBeLessThan(5 * 1024 * 1024);
    expect(edge.logRecords().some((record) => record['reason'] === 'frame_too_large')).toBe(true);
  });

  it('registers a real node within 15 s while 300 idle sockets are held on the node port', async () => {
    const idle: net.Socket[] = [];
    try {
      for (let index = 0; index < 300; index += 1) {
        const socket = await connect(edge.addresses.transport).catch(() => undefined);
        if (!socket) continue;
        socket.on('error', () => undefined);
        socket.resume();
        idle.push(socket);
      }
      const started = Date.now();
      startNodeProcess(group, {
        edge: edge.addresses.transport,
        nodeId: 'n2',
        token: TOKEN,
        dataDir: await group.tempDir('iop-e2e-hostile-n2-'),
      });
      await waitUntil(
        async () => (await connections('n2')) >= 1,
        15_000,
        () => `n2 registered\n${edge.describe()}`,
      );
      process.stdout.write(
        `[e2e hostile] n2 registered ${Date.now() - started} ms after start with ${idle.length} idle sockets held\n`,
      );
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await connections('n1')).toBe(1);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });

  it('answers an unauthenticated 10 MiB A2A body with 401 in under 100 ms without reading it', async () => {
    const socket = await connect(edge.addresses.a2a);
    socket.on('error', () => undefined);
    let response = '';
    const answered = new Promise<number>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        response += chunk.toString('utf8');
        resolve(performance.now());
      });
    });
    const { host, port } = address(edge.addresses.a2a);
    const started = performance.now();
    socket.write(
      `POST /a2a HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-type: application/json\r\n` +
        `content-length: ${10 * 1024 * 1024}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(64 * 1024, 0x20));
    const answeredAt = await answered;
    process.stdout.write(
      `[e2e hostile] unauthenticated A2A 401 after ${(answeredAt - started).toFixed(1)} ms\n`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    expect(answeredAt - started).toBeLessThan(100);
    // The server closes instead of reading the rest of the declared body.
    expect(await closedWithin(socket, 3000)).toBe(true);
  });

  it('answers an OpenAI body larger than one frame to the node with 413 at once (not 502 from the link)', async () => {
    const socket = await connect(edge.addresses.openai);
    socket.on('error', () => undefined);
    const answered = new Promise<string>((resolve) =>
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))),
    );
    const { host, port } = address(edge.addresses.openai);
    const started = performance.now();
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-type: application/json\r\n` +
        `content-length: ${16 * 1024 * 1024 + 1}\r\n\r\n{"model":"e2e-argv","messages":[`,
    );
    const response = await answered;
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
    expect(performance.now() - started).toBeLessThan(1000);
    socket.destroy();
  });

  it('closes a slowloris connection on every HTTP listener (header timeout)', async () => {
    const listeners = {
      openai: edge.addresses.openai,
      a2a: edge.addresses.a2a,
      metrics: edge.addresses.metrics,
      bootstrap: /^ {2}bootstrap\s+(\S+)/m.exec(edge.stdout())?.[1] ?? '',
    };
    const results = await Promise.all(
      Object.entries(listeners).map(async ([name, listen]) => {
        const socket = await connect(listen).catch((error: unknown) => {
          throw new Error(`${name} listener ${listen}: ${String(error)}`);
        });
        socket.on('error', () => undefined);
        socket.write('GET / HTTP/1.1\r\nhost: x\r\n');
        const drip = setInterval(() => socket.write('x-drip: 1\r\n'), 1000);
        const opened = Date.now();
        const closed = await closedWithin(socket, 20_000);
        clearInterval(drip);
        socket.destroy();
        process.stdout.write(`[e2e hostile] slowloris on ${name} closed after ${Date.now() - opened} ms\n`);
        return [name, closed] as const;
      }),
    );
    expect(Object.fromEntries(results)).toEqual({ openai: true, a2a: true, metrics: true, bootstrap: true });
  }, 30_000);

  it('passes the prompt "--version" to the CLI as text', async () => {
    const { status, body } = await chat('e2e-argv', '--version');
    expect(status).toBe(200);
    expect(content(body)).toContain('PROMPT: --version');
    expect(content(body)).not.toContain('fake-cli 0.0.0-fake');
  });

  it('refuses metadata.workspace /etc with 400 workspace_not_allowed', async () => {
    const { status, body } = await chat('e2e-argv', 'iop_ws', { workspace: '/etc' });
    expect(status).toBe(400);
    expect(body['error']).toMatchObject({ code: 'workspace_not_allowed' });
  });

  it('recovers when an opencode-style server is killed during its start: the next run succeeds', async () => {
    const first = chat('e2e-oc', 'Convert token iop_opencode_one');
    await waitUntil(
      () => {
        try {
          return Number(readFileSync(hangMarker, 'utf8').trim()) > 0;
        } catch {
          return false;
        }
      },
      20_000,
      'the opencode server to start',
    );
    process.kill(Number(readFileSync(hangMarker, 'utf8').trim()), 'SIGKILL');
    expect((await first).status).toBeGreaterThanOrEqual(500);
    const second = await chat('e2e-oc', 'Convert token iop_opencode_one');
    expect(second.status).toBe(200);
    expect(content(second.body)).toBe('IOP_OPENCODE_ONE_OK');
  });

  it('fails a run whose CLI prints one 50 MB line, cleanly; the node stays responsive and connected', async () => {
    const registrationsBefore = await connections('n1');
    const started = Date.now();
    const flood = await chat('e2e-flood', 'go');
    expect(flood.status).toBeGreaterThanOrEqual(500);
    expect(JSON.stringify(flood.body)).toContain('output_line_too_long');
    process.stdout.write(`[e2e hostile] 50 MB line run failed after ${Date.now() - started} ms\n`);
    expect(Date.now() - started).toBeLessThan(30_000);
    const after = await chat('e2e-argv', 'iop_after_flood');
    expect(content(after.body)).toContain('IOP_AFTER_FLOOD_OK');
    // Heartbeats went on: the link was never lost or re-registered.
    expect(await connections('n1')).toBe(registrationsBefore);
    expect(edge.logRecords().some((record) => record['msg'] === 'node missed its heartbeat deadline')).toBe(
      false,
    );
    expect(node.running).toBe(true);
  });
});
