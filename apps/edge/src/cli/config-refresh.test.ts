import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { RefreshConfigResponse } from '@iop/wire';
import type { AdminClient, AdminClientOptions } from '../admin/admin-client.js';
import { ensureEdgeIdentity } from '../tls/edge-identity.js';
import { memoryIo, type MemoryIo } from './test-support/memory-io.js';
import { createConfigRefreshCommand, REFRESH_CALL_TIMEOUT_MS } from './config-refresh.js';
import { runCli } from './run-cli.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'iop-config-refresh-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function io(env: NodeJS.ProcessEnv = {}): MemoryIo {
  return memoryIo(dir, env, path.join(dir, 'iop-edge'));
}

/** A client that records how it was built and what it was sent, answering `response`. */
function recordingClient(response: Partial<RefreshConfigResponse>) {
  const calls: {
    options: AdminClientOptions;
    sent?: { mode: string; configYaml: string; configPath: string };
  }[] = [];
  let closed = 0;
  const createClient = (options: AdminClientOptions): AdminClient => {
    const call: (typeof calls)[number] = { options };
    calls.push(call);
    return {
      refreshConfig(input) {
        call.sent = input;
        return Promise.resolve(RefreshConfigResponse.fromPartial(response));
      },
      close() {
        closed += 1;
      },
    } as AdminClient;
  };
  return { calls, createClient, closed: () => closed };
}

describe('config refresh command', () => {
  it("dials the candidate's refresh.listen (wildcard → loopback) with its token and sends the file as is", async () => {
    const file = path.join(dir, 'edge.yaml');
    // An admin token beyond loopback needs edge.tls; the client then trusts exactly the edge's key.
    const identity = await ensureEdgeIdentity({
      dir: path.join(dir, 'data'),
      commonName: 'e',
      hosts: ['localhost'],
    });
    const text =
      'edge: { tls: { enabled: true, cert_file: "data/edge-cert.pem", key_file: "data/edge-key.pem" } }\n' +
      'refresh: { listen: "0.0.0.0:29093", admin_token: config-token }\n';
    await writeFile(file, text);
    const client = recordingClient({ status: 'applied', mode: 'apply' });
    const command = createConfigRefreshCommand({ createClient: client.createClient });
    const captured = io();
    expect(
      await runCli(['config', 'refresh', '--mode', 'apply', '--config', file], captured.io, [command]),
    ).toBe(0);
    expect(client.calls[0]?.options).toEqual({
      address: '127.0.0.1:29093',
      token: 'config-token',
      timeoutMs: REFRESH_CALL_TIMEOUT_MS,
      tls: { ca: await readFile(identity.certFile), fingerprint: identity.fingerprint },
    });
    expect(client.calls[0]?.sent).toEqual({ mode: 'apply', configYaml: text, configPath: file });
    expect(client.closed()).toBe(1);
    expect(captured.out()).toBe(
      `config refresh (apply) ${file}: applied live (no restart needed)\n  no changes\n`,
    );
  });

  it('prefers --addr and IOP_EDGE_ADMIN_TOKEN; an invalid candidate still goes to the default address', async () => {
    const file = path.join(dir, 'broken.yaml');
    await writeFile(file, 'nodes: [unclosed');
    const client = recordingClient({
      status: 'rejected',
      mode: 'dry-run',
      reports: [{ path: '', change: 'modified', class: 'invalid', reason: '(document): bad yaml' }],
    });
    const command = createConfigRefreshCommand({ createClient: client.createClient });
    const captured = io({ IOP_EDGE_ADMIN_TOKEN: 'env-token' });
    const code = await runCli(['config', 'refresh', '--mode', 'dry-run', '--config', file], captured.io, [
      command,
    ]);
    expect(code).toBe(1);
    expect(client.calls[0]?.options).toMatchObject({ address: '127.0.0.1:19093', token: 'env-token' });
    expect(captured.out()).toContain('  invalid modified (document): bad yaml');
    await runCli(
      ['config', 'refresh', '--mode', 'dry-run', '--addr', '[::1]:1234', '--config', file],
      io().io,
      [command],
    );
    expect(client.calls[1]?.options).toMatchObject({ address: '[::1]:1234' });
  });

  it('prints node results, exits 3 for restart_required and 1 for a rejected apply', async () => {
    const file = path.join(dir, 'edge.yaml');
    await writeFile(file, '{}');
    const client = recordingClient({
      status: 'restart_required',
      mode: 'apply',
      changedNodes: ['n1'],
      reports: [
        {
          path: 'nodes[n1].alias',
          change: 'modified',
          class: 'restart',
          reason: 'node alias identifies the node link',
        },
      ],
    });
    const captured = io();
    const command = createConfigRefreshCommand({ createClient: client.createClient });
    expect(
      await runCli(['config', 'refresh', '--mode', 'apply', '--config', file], captured.io, [command]),
    ).toBe(3);
    expect(captured.out()).toContain(
      '  restart modified nodes[n1].alias: node alias identifies the node link',
    );

    // All or nothing: a silent node rejects the apply; the node that took the payload is listed reverted.
    const rejected = recordingClient({
      status: 'rejected',
      mode: 'apply',
      nodeResults: [
        { nodeId: 'n1', status: 'reverted', error: '' },
        { nodeId: 'n2', status: 'timeout', error: 'config refresh on node n2 timed out after 10000 ms' },
      ],
    });
    const second = io();
    expect(
      await runCli(['config', 'refresh', '--mode', 'apply', '--config', file], second.io, [
        createConfigRefreshCommand({ createClient: rejected.createClient }),
      ]),
    ).toBe(1);
    expect(second.out()).toContain('rejected: nothing was applied');
    expect(second.out()).toContain(
      '  nodes:\n    n1 reverted\n    n2 timeout: config refresh on node n2 timed out after 10000 ms\n',
    );
  });

  it('refuses a missing or unknown --mode with a usage error and never builds a client', async () => {
    const client = recordingClient({ status: 'applied' });
    const command = createConfigRefreshCommand({ createClient: client.createClient });
    for (const args of [['--mode', 'Apply'], ['--mode', ''], []]) {
      const captured = io();
      expect(await runCli(['config', 'refresh', ...args], captured.io, [command])).toBe(2);
      expect(captured.err()).toContain('--mode must be dry-run or apply');
    }
    expect(client.calls).toHaveLength(0);
  });

  it('an answer outside the documented vocabulary is an error, not a guess', async () => {
    const file = path.join(dir, 'edge.yaml');
    await writeFile(file, '{}');
    const client = recordingClient({ status: 'partially_applied', mode: 'apply' });
    const captured = io();
    const command = createConfigRefreshCommand({ createClient: client.createClient });
    expect(
      await runCli(['config', 'refresh', '--mode', 'apply', '--config', file], captured.io, [command]),
    ).toBe(1);
    expect(captured.err()).toContain("the edge answered an unknown refresh status 'partially_applied'");
  });
});
