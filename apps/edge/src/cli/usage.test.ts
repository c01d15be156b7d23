import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createAdminClient } from '../admin/admin-client.js';
import { systemClock } from '../clock.js';
import { startAdminServer, type AdminSurface } from '../admin/admin-server.js';
import { FakeEdgeService } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { ManualClock } from '@iop/clock';
import { openUsageDatabase } from '../governance/usage-database.js';
import { UsageStore, type UsageRecord } from '../governance/usage-store.js';
import { silentLogger } from '../logging.js';
import { runCli } from './run-cli.js';
import { memoryIo } from './test-support/memory-io.js';
import { createUsageCommand } from './usage.js';

function record(overrides: Partial<UsageRecord>): UsageRecord {
  return {
    atMs: 0,
    runId: 'r',
    principal: 'team-a',
    surface: 'openai',
    model: 'm1',
    provider: 'p1',
    node: 'n1',
    inputTokens: 0,
    outputTokens: 0,
    queueMs: 2,
    durationMs: 10,
    outcome: 'completed',
    ...overrides,
  };
}

describe('iop-edge usage', () => {
  let dir: string;
  let store: UsageStore;
  let surface: AdminSurface | undefined;
  const clock = new ManualClock();

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-usage-cli-'));
    store = new UsageStore({
      db: openUsageDatabase(path.join(dir, 'usage.db')).db,
      clock,
      logger: silentLogger,
      retentionDays: 30,
    });
    const now = clock.now();
    store.record(
      record({ atMs: now - 3_600_000, principal: 'team-a', model: 'm1', inputTokens: 12, outputTokens: 8 }),
    );
    store.record(
      record({ atMs: now - 60_000, principal: 'team-a', model: 'm2', inputTokens: 5, outputTokens: 3 }),
    );
    store.record(
      record({ atMs: now - 60_000, principal: 'team-b', model: 'm1', inputTokens: 7, outputTokens: 1 }),
    );
    store.record(record({ atMs: now - 2 * 86_400_000, principal: 'team-b', model: 'm1', inputTokens: 100 }));
    store.record(record({ atMs: now - 60_000, principal: '', model: 'm1', outcome: 'rejected' }));
  });

  afterEach(async () => {
    await surface?.close();
    surface = undefined;
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function serve(): Promise<string> {
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      service: FakeEdgeService.forConsole(),
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
      usage: (query) => store.summary(query),
    });
    return surface.address;
  }

  const command = createUsageCommand({
    createClient: (options) => createAdminClient({ ...options, timeoutMs: 3000 }, systemClock),
    now: () => clock.now(),
  });

  it('--json sums tokens per key over the last 24 h through the admin API', async () => {
    const address = await serve();
    const { io, out, err } = memoryIo(dir);
    expect(await runCli(['usage', '--json', '--addr', address], io, [command])).toBe(0);
    expect(err()).toBe('');
    const printed = JSON.parse(out()) as { by: string; groups: Record<string, unknown>[] };
    expect(printed.by).toBe('key');
    expect(printed.groups).toEqual([
      expect.objectContaining({
        group: 'team-a',
        runs: 2,
        input_tokens: 17,
        output_tokens: 11,
        total_tokens: 28,
      }),
      expect.objectContaining({ group: 'team-b', runs: 1, input_tokens: 7, output_tokens: 1 }),
      expect.objectContaining({ group: '', runs: 1, input_tokens: 0, rejected: 1 }),
    ]);
  });

  it('groups by model over every kept record with --since all, as a table', async () => {
    const address = await serve();
    const { io, out } = memoryIo(dir);
    expect(await runCli(['usage', '--by', 'model', '--since', 'all', '--addr', address], io, [command])).toBe(
      0,
    );
    const lines = out().trim().split('\n');
    expect(lines[0]).toMatch(/^MODEL\s+RUNS\s+IN\s+OUT\s+TOTAL/);
    expect(lines[1]).toMatch(/^m1\s+4\s+119\s+9\s+128\b/);
    expect(lines[2]).toMatch(/^m2\s+1\s+5\s+3\s+8\b/);
  });

  it('rejects an unknown grouping and a bad duration before calling the edge', async () => {
    const { io } = memoryIo(dir);
    await expect(command.run(['--by', 'colour', '--addr', '127.0.0.1:1'], io)).rejects.toThrow('--by');
    await expect(command.run(['--since', 'yesterday', '--addr', '127.0.0.1:1'], io)).rejects.toThrow(
      '--since',
    );
  });

  it('answers UNAVAILABLE when the edge records no usage', async () => {
    surface = await startAdminServer({
      listen: '127.0.0.1:0',
      service: FakeEdgeService.forConsole(),
      events: new FakeEventBus(),
      logger: silentLogger,
      clock: systemClock,
      closeGraceMs: 100,
    });
    const { io, err } = memoryIo(dir);
    expect(await runCli(['usage', '--addr', surface.address], io, [command])).toBe(1);
    expect(err()).toContain('usage is not recorded');
  });
});
