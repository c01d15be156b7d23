// Live config refresh with the invalid-config corpus (issue 10): every fixture in
// packages/config/test/fixtures/invalid (≥50: bad YAML, wrong types, dangling references, negative priority,
// duplicate ids, ...) is sent to a running edge process through the admin API's RefreshConfig, in both modes, while
// a node process serves a stream. Each is rejected with every error the loader finds, each with its path and
// line; afterwards the running state is unchanged: the providers snapshot, the node list, no node config push,
// and dispatch (which provider serves the next requests).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import type { FakeServer } from '@iop/testkit';
import { createAdminClient, type AdminClient } from '../../src/admin/admin-client.js';
import { systemClock } from '../../src/clock.js';
import { fromRefreshConfigResponse } from '../../src/refresh/refresh-result.js';
import {
  ProcessGroup,
  repoRoot,
  runEdgeCommand,
  startEdgeProcess,
  startNodeProcess,
  waitUntil,
  type EdgeProcess,
  type TestProcess,
} from '../support/e2e-processes.js';
import { FABRIC_TOKEN, MODEL_QWEN, fabricConfig } from '../support/fabric-config.js';
import { startFakeBackends, stopFabric } from '../support/fabric-setup.js';
import { classifyChatOutcome } from '../support/openai-outcome.js';

jest.setTimeout(90_000);

const fixtureDir = path.join(repoRoot, 'packages/config/test/fixtures/invalid');
const fixtures = readdirSync(fixtureDir)
  .filter((name) => name.endsWith('.yaml'))
  .sort()
  .map((name) => {
    const text = readFileSync(path.join(fixtureDir, name), 'utf8');
    const expected = [...text.matchAll(/^# expect: (.+)$/gm)].map((match) => (match[1] ?? '').trim());
    return { name, text, expected };
  });

const group = new ProcessGroup();
let ollama: FakeServer;
let vllm: FakeServer;
let edge: EdgeProcess;
let node: TestProcess;
let admin: AdminClient;

beforeAll(async () => {
  ({ ollama, vllm } = await startFakeBackends());
  const dir = await group.tempDir('iop-e2e-refresh-');
  // Two nodes serve the model, so dispatch order (least in flight, then round-robin) is observable.
  edge = await startEdgeProcess(
    group,
    dir,
    fabricConfig({
      dataDir: `${dir}/data`,
      nodes: ['n1', 'n2'].map((id) => ({ id, ollamaUrl: ollama.url, vllmUrl: vllm.url, capacity: 3 })),
    }),
  );
  for (const id of ['n1', 'n2']) {
    node = startNodeProcess(group, {
      edge: edge.addresses.transport,
      nodeId: id,
      token: FABRIC_TOKEN,
      dataDir: await group.tempDir(`iop-e2e-refresh-${id}-`),
    });
  }
  admin = createAdminClient({ address: edge.addresses.admin, timeoutMs: 15_000 }, systemClock);
  await waitUntil(
    async () => (await admin.listProviders()).filter((entry) => entry.status === 'ready').length === 4,
    30_000,
    () => `4 ready providers\n${edge.describe()}\n${node.describe()}`,
  );
}, 60_000);

afterAll(() => stopFabric(group, admin, ollama, vllm));

async function runningState(): Promise<unknown> {
  const providers = await admin.listProviders();
  const nodes = await admin.listNodes();
  return {
    providers: providers
      .map(({ providerId, nodeId, status, capacity, priority, servedModels, inFlight, queued }) => ({
        providerId,
        nodeId,
        status,
        capacity,
        priority,
        servedModels,
        inFlight,
        queued,
      }))
      .sort((a, b) => a.providerId.localeCompare(b.providerId)),
    nodes: nodes.map((entry) => [entry.nodeId, entry.connectedSinceUnixMs]).sort(),
  };
}

/** Which provider serves each of `count` sequential requests (round-robin between equal candidates). */
let dispatchCount = 0;

async function dispatchSequence(count: number): Promise<string[]> {
  const providers: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const response = await fetch(`${edge.addresses.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // A new conversation each time: one conversation would stay on its provider (affinity).
      body: JSON.stringify({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: `which (${(dispatchCount += 1)})` }],
      }),
    });
    expect(await classifyChatOutcome(response, false)).toEqual({ kind: 'ok' });
    providers.push(response.headers.get('x-iop-provider') ?? '');
  }
  return providers;
}

describe('live refresh with invalid configs', () => {
  it('holds at least 50 invalid fixtures', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(50);
  });

  it('rejects every invalid config with all its errors and paths, changing nothing that runs', async () => {
    const stateBefore = await runningState();
    const dispatchBefore = await dispatchSequence(4);
    // Round-robin alternates between the two nodes' providers.
    expect(new Set(dispatchBefore).size).toBe(2);

    // A stream that spans the whole corpus.
    vllm.setBehavior({ tokenCount: 200, tokenDelayMs: 10 });
    const stream = fetch(`${edge.addresses.openai}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL_QWEN,
        messages: [{ role: 'user', content: 'live' }],
        stream: true,
      }),
    })
      .then((response) => classifyChatOutcome(response, true))
      .catch((error: unknown) => ({ kind: 'malformed' as const, detail: String(error) }));
    await waitUntil(() => vllm.activeRequests === 1, 10_000, 'stream running upstream');

    const mismatches: unknown[] = [];
    let refreshes = 0;
    const started = Date.now();
    for (const fixture of fixtures) {
      const local = parseConfigText(fixture.text, edge.configPath);
      if (local.ok) throw new Error(`${fixture.name} is valid`);
      for (const mode of ['dry-run', 'apply']) {
        const result = fromRefreshConfigResponse(
          await admin.refreshConfig({ mode, configYaml: fixture.text, configPath: edge.configPath }),
        );
        refreshes += 1;
        const paths = [...new Set(result.reports.map((report) => report.path || '(document)'))].sort();
        const wellFormed = result.reports.every(
          (report) =>
            report.class === 'invalid' &&
            report.reason.startsWith(report.path || '(document)') &&
            /\(line \d+\): \S/.test(report.reason),
        );
        const actual = {
          status: result.status,
          paths,
          reports: result.reports.length,
          wellFormed,
          changed: [...result.changed_nodes, ...result.changed_providers, ...result.changed_models],
          nodeResults: result.node_results.length,
        };
        const wanted = {
          status: 'rejected',
          paths: [...fixture.expected].sort(),
          // Every error the loader finds is reported, not just the first.
          reports: local.issues.length,
          wellFormed: true,
          changed: [],
          nodeResults: 0,
        };
        if (JSON.stringify(actual) !== JSON.stringify(wanted))
          mismatches.push({ fixture: fixture.name, mode, actual, wanted });
      }
    }
    process.stdout.write(
      `[e2e refresh] ${fixtures.length} invalid configs × 2 modes = ${refreshes} refreshes rejected in ${Date.now() - started} ms\n`,
    );
    expect(mismatches).toEqual([]);

    expect(await stream).toEqual({ kind: 'ok' });
    vllm.setBehavior({ tokenCount: 8, tokenDelayMs: 0 });
    expect(await runningState()).toEqual(stateBefore);
    // Dispatch continues the same rotation over the same providers.
    const dispatchAfter = await dispatchSequence(4);
    expect(new Set(dispatchAfter)).toEqual(new Set(dispatchBefore));
    expect(edge.logRecords().filter((entry) => entry.msg === 'node configuration pushed')).toEqual([]);
    expect(node.running).toBe(true);
  });

  it('`iop-edge config refresh` prints every error of a rejected candidate and exits 1', async () => {
    const fixture = fixtures.find((entry) => entry.name === 'several-mistakes-at-once.yaml') ?? fixtures[0];
    if (!fixture) throw new Error('no fixture');
    const stateBefore = await runningState();
    const result = await runEdgeCommand(group, [
      'config',
      'refresh',
      '--mode',
      'apply',
      '--json',
      '--addr',
      edge.addresses.admin,
      '--config',
      path.join(fixtureDir, fixture.name),
    ]);
    expect(result.status.code).toBe(1);
    const printed = JSON.parse(result.stdout) as { status: string; reports: { path: string }[] };
    expect(printed.status).toBe('rejected');
    expect([...new Set(printed.reports.map((report) => report.path || '(document)'))].sort()).toEqual(
      [...fixture.expected].sort(),
    );
    expect(fixture.expected.length).toBeGreaterThan(1);
    expect(await runningState()).toEqual(stateBefore);
  });
});
