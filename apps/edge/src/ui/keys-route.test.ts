// The Keys view's figures: recorded usage per key (an agent's model calls charged to its key), limits from the
// key's config entry, the budget window's use, the governor's live counters, and never a secret.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '@iop/clock';
import { parseConfigText, type EdgeConfig } from '@iop/config';
import { createGovernor, type Governor } from '../governance/governor.js';
import { principalOf } from '../governance/principal.js';
import { openUsageDatabase } from '../governance/usage-database.js';
import { UsageStore } from '../governance/usage-store.js';
import { silentLogger } from '../logging.js';
import { UiError } from './errors.js';
import { keysView, type KeysRouteDeps } from './keys-route.js';

const YAML = `
edge: { id: edge-keys }
openai:
  api_keys:
    - { id: team-a, key: "sk-team-a-secret", models: [m1], rpm: 60, tpm: 10000, max_concurrent: 2,
        token_budget: { tokens: 1000, per: day } }
    - "sk-plain-secret"
models:
  - { id: m1, providers: { p1: served-1 } }
nodes:
  - id: n1
    adapters: { ollama: { base_url: "http://127.0.0.1:11434" } }
    providers:
      - { id: p1, type: ollama, category: local_inference, adapter: ollama, models: [served-1], capacity: 2 }
`;

function loadConfig(): EdgeConfig {
  const result = parseConfigText(YAML, 'keys.yaml');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const HOUR = 3_600_000;

describe('the Keys view', () => {
  let dir: string;
  let store: UsageStore;
  let clock: ManualClock;
  let governor: Governor;
  let config: EdgeConfig;
  let deps: KeysRouteDeps;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-keys-'));
    // 2026-01-15T12:00Z: the day's budget window began at midnight UTC, twelve hours ago.
    clock = new ManualClock();
    store = new UsageStore({
      db: openUsageDatabase(path.join(dir, 'usage.db')).db,
      clock,
      logger: silentLogger,
      retentionDays: 30,
    });
    governor = createGovernor({ clock, spent: store, sink: store });
    config = loadConfig();
    deps = {
      config: () => config,
      usage: (query) => store.summary(query),
      liveLimits: () => governor.snapshot(),
      clock,
    };
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const teamA = () => principalOf(config.openai.api_keys[0]);

  /** One governed run under team-a, finished at once (a child when `parentRunId` is set). */
  function finishedRun(runId: string, inputTokens: number, outputTokens: number, parentRunId = ''): void {
    governor
      .admit({
        principal: teamA(),
        surface: 'openai',
        model: 'm1',
        estimatedTokens: 10,
        child: parentRunId !== '',
      })
      .finish({
        runId,
        outcome: 'completed',
        usage: { inputTokens, outputTokens },
        provider: 'p1',
        node: 'n1',
        queueMs: 0,
        durationMs: 5,
        parentRunId,
        childTokens: 0,
      });
  }

  it("shows each key's runs and tokens with its agents' model calls charged to it, and its budget left", async () => {
    // Yesterday 11:00 UTC (outside the last 24 h and today's budget window, inside 7 days).
    clock.advance(-25 * HOUR);
    finishedRun('yesterday', 100, 50);
    clock.advance(24 * HOUR);
    // An agent run still going, whose two model calls (children) ended.
    const agent = governor.admit({ principal: teamA(), surface: 'a2a', model: 'm1', estimatedTokens: 10 });
    clock.advance(30 * 60_000);
    finishedRun('call-1', 200, 20, 'agent');
    finishedRun('call-2', 300, 30, 'agent');
    const lastUsed = clock.now();
    clock.advance(30 * 60_000);

    let view = await keysView(deps, '24h');
    expect(view.since_ms).toBe(clock.now() - 24 * HOUR);
    const [a, plain] = view.keys;
    expect(a).toMatchObject({
      id: 'team-a',
      configured: true,
      models: ['m1'],
      rpm: 60,
      tpm: 10000,
      max_concurrent: 2,
      runs: 2,
      child_runs: 2,
      input_tokens: 500,
      output_tokens: 50,
      outcomes: { completed: 2, error: 0, cancelled: 0, rejected: 0 },
      last_used_ms: lastUsed,
      budget: {
        tokens: 1000,
        per: 'day',
        window_start_ms: Date.UTC(2026, 0, 15),
        window_end_ms: Date.UTC(2026, 0, 16),
        used: 550,
        left: 450,
      },
    });
    expect(a?.live?.in_flight).toBe(1);
    // A plain-string key: no limits, no usage yet, named by its id.
    expect(plain).toMatchObject({ configured: true, runs: 0, budget: null, rpm: null, last_used_ms: null });
    expect(plain?.id).toMatch(/^key-[0-9a-f]{8}$/);

    // The agent run ends with its own tokens; the week includes yesterday's run, the budget window does not.
    agent.finish({
      runId: 'agent',
      outcome: 'completed',
      usage: { inputTokens: 40, outputTokens: 10 },
      provider: 'p1',
      node: 'n1',
      queueMs: 0,
      durationMs: 3_600_000,
      parentRunId: '',
      childTokens: 550,
    });
    view = await keysView(deps, '7d');
    expect(view.keys[0]).toMatchObject({
      runs: 4,
      child_runs: 2,
      input_tokens: 640,
      output_tokens: 110,
      budget: { used: 600, left: 400 },
      live: { in_flight: 0 },
    });
  });

  it('lists keys that only the usage record knows (a removed key, anonymous runs) after the configured ones', async () => {
    governor.admit({ principal: undefined, surface: 'console', model: 'm1', estimatedTokens: 1 }).finish({
      runId: 'anon',
      outcome: 'error',
      usage: { inputTokens: 1, outputTokens: 0 },
      provider: 'p1',
      node: 'n1',
      queueMs: 0,
      durationMs: 1,
      parentRunId: '',
      childTokens: 0,
    });
    finishedRun('before-removal', 7, 3);
    config = { ...config, openai: { ...config.openai, api_keys: config.openai.api_keys.slice(1) } };
    const view = await keysView(deps, 'all');
    expect(view.since_ms).toBe(0);
    expect(
      view.keys.map((key) => [key.id.startsWith('key-') ? 'plain' : key.id, key.configured, key.runs]),
    ).toEqual([
      ['plain', true, 0],
      ['team-a', false, 1],
      ['', false, 1],
    ]);
    expect(view.keys[1]?.budget).toBeNull();
    expect(view.keys[2]?.outcomes.error).toBe(1);
  });

  it('never carries a key secret or its digest', async () => {
    finishedRun('r', 1, 1);
    const text = JSON.stringify(await keysView(deps, '24h'));
    for (const key of config.openai.api_keys) {
      expect(text).not.toContain(key.key);
      expect(text).not.toContain(key.key_sha256);
    }
    expect(text).not.toContain('secret');
  });

  it('refuses a since that is not a duration, and answers usage_disabled without a usage record', async () => {
    await expect(keysView(deps, 'yesterday')).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
    await expect(keysView(deps, '0h')).rejects.toBeInstanceOf(UiError);
    await expect(keysView({ ...deps, usage: undefined }, '24h')).rejects.toMatchObject({
      code: 'usage_disabled',
      status: 503,
    });
  });
});
