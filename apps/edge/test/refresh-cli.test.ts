// `iop-edge config refresh` against a running in-process edge (real admin gRPC API): exit codes 0 / 3 / 1 / 2,
// the readable summary, the JSON result, and an unreachable edge.
import { describe, it, expect, afterAll, beforeAll } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { memoryIo } from '../src/cli/test-support/memory-io.js';
import { runCli } from '../src/cli/run-cli.js';
import type { RefreshResult } from '../src/refresh/refresh-result.js';
import {
  configDocument,
  configText,
  startRefreshHarness,
  type ConfigSpec,
  type ProviderSpec,
  type RefreshHarness,
} from './refresh-harness.js';

let harness: RefreshHarness;
let base: ConfigSpec;

function provider(id: string, overrides: Partial<ProviderSpec> = {}): ProviderSpec {
  return { id, served: `served-${id}`, ...overrides };
}

function spec(providers: ProviderSpec[], extra: Partial<ConfigSpec> = {}): ConfigSpec {
  return {
    dataDir: base.dataDir,
    nodes: [{ id: 'n1', providers }],
    models: [{ id: 'm', providers: Object.fromEntries(providers.map((entry) => [entry.id, entry.served])) }],
    ...extra,
  };
}

beforeAll(async () => {
  harness = await startRefreshHarness(
    (dataDir) =>
      (base = {
        dataDir,
        nodes: [{ id: 'n1', providers: [provider('p1')] }],
        models: [{ id: 'm', providers: { p1: 'served-p1' } }],
      }),
  );
});

afterAll(async () => {
  await harness.close();
});

async function cli(
  args: string[],
  candidate?: string,
): Promise<{ code: number; out: string; err: string; file: string }> {
  const file = path.join(harness.dir, `candidate-${Math.random().toString(36).slice(2)}.yaml`);
  if (candidate !== undefined) await writeFile(file, candidate);
  const { io, out, err } = memoryIo(harness.dir, {}, path.join(harness.dir, 'iop-edge'));
  const code = await runCli(['config', 'refresh', '--config', file, ...args], io);
  return { code, out: out(), err: err(), file };
}

describe('iop-edge config refresh', () => {
  it('exit 0 for a dry-run that would apply, and it changes nothing', async () => {
    const run = await cli(
      ['--mode', 'dry-run', '--addr', harness.adminAddress],
      configText(spec([provider('p1', { capacity: 2 })])),
    );
    expect(run.code).toBe(0);
    expect(run.out.split('\n')).toEqual([
      `config refresh (dry-run) ${run.file}: would be applied live (dry-run: nothing changed)`,
      '  changed nodes: n1',
      '  changed providers: p1',
      '  live    modified nodes[n1].providers[p1].capacity: provider capacity is applied to the pool live',
      '',
    ]);
    expect(harness.pool.snapshot()[0]?.capacity).toBe(1);
  });

  it('exit 0 for an applied refresh; --json prints the result with every array present', async () => {
    const run = await cli(
      ['--mode', 'apply', '--json', '--addr', harness.adminAddress],
      configText(spec([provider('p1', { priority: 7 })])),
    );
    expect(run.code).toBe(0);
    const result = JSON.parse(run.out) as RefreshResult;
    expect(result).toEqual({
      status: 'applied',
      mode: 'apply',
      changed_nodes: ['n1'],
      changed_providers: ['p1'],
      changed_models: [],
      reports: [
        {
          path: 'nodes[n1].providers[p1].priority',
          change: 'modified',
          class: 'live',
          reason: 'provider priority is applied to the pool live',
        },
      ],
      node_results: [],
    });
    expect(harness.pool.snapshot()[0]?.priority).toBe(7);
  });

  it('exit 3 when a restart is required, naming the field', async () => {
    const run = await cli(
      ['--mode', 'apply', '--addr', harness.adminAddress],
      configText(spec([provider('p1', { priority: 7 })], { heartbeatIntervalMs: 2500 })),
    );
    expect(run.code).toBe(3);
    expect(run.out).toContain('restart required: nothing was applied');
    expect(run.out).toContain(
      '  restart modified edge.heartbeat_interval_ms: edge settings are read at startup',
    );
  });

  it('exit 1 when rejected, listing every issue with its path', async () => {
    const document = configDocument(spec([provider('p1', { capacity: 0 })]));
    const run = await cli(['--mode', 'apply', '--addr', harness.adminAddress], JSON.stringify(document));
    expect(run.code).toBe(1);
    expect(run.out).toContain('rejected: nothing was applied');
    expect(run.out).toMatch(/ {2}invalid modified nodes\[0\]\.providers\[0\]\.capacity \(line 1\): /);
    expect(harness.pool.snapshot()[0]?.capacity).toBe(1);
  });

  it('exit 2 for any other --mode, before contacting the edge', async () => {
    const applied = harness.refresher.applied;
    const run = await cli(['--mode', 'force', '--addr', harness.adminAddress], configText(base));
    expect(run.code).toBe(2);
    expect(run.err).toContain("--mode must be dry-run or apply (got 'force')");
    expect((await cli(['--addr', harness.adminAddress], configText(base))).code).toBe(2);
    expect(harness.refresher.applied).toBe(applied);
  });

  it('exit 1 when the edge is unreachable or the candidate file is missing', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const run = await cli(['--mode', 'dry-run', '--addr', `127.0.0.1:${port}`], configText(base));
    expect(run.code).toBe(1);
    expect(run.err).toContain(`cannot reach the edge admin API at 127.0.0.1:${port}`);
    const missing = await cli(['--mode', 'dry-run', '--addr', harness.adminAddress]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/cannot read .*candidate-.*\.yaml/);
  });
});
