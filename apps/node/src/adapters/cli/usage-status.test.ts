import { afterEach, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { create } from '@iop/wire';
import type { Adapter } from '../adapter.js';
import { createClaudeStreamJsonParser } from './output/claude-stream-json.js';
import { claudeRateLimitFields, parseUsageText } from './usage-status.js';
import {
  cliInstance,
  collect,
  request,
  tempDir,
  testAdapter,
  testkitBin,
  transcriptsDir,
} from './test-support/cli-test-kit.js';

const signal = () => new AbortController().signal;
const replay = path.join(testkitBin, 'replay-cli.mjs');

describe('usage status', () => {
  let adapter: Adapter | undefined;
  const cleanups: Array<() => void> = [];

  afterEach(async () => {
    await adapter?.close();
    adapter = undefined;
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('codex: reads rate_limits from the newest rollout file (recorded)', async () => {
    const home = tempDir('iop-codex-home-');
    cleanups.push(home.remove);
    const day = path.join(home.path, 'sessions/2026/11/29');
    mkdirSync(day, { recursive: true });
    copyFileSync(
      path.join(transcriptsDir, 'codex/rollout-rate-limits.jsonl'),
      path.join(day, 'rollout-2026-11-29T22-00-00-x.jsonl'),
    );
    adapter = testAdapter(
      cliInstance({ codex: { command: replay, outputFormat: 'codex-json', env: { CODEX_HOME: home.path } } }),
    );
    const status = await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'codex' }), {
      signal: signal(),
    });
    expect(status.ok).toBe(true);
    expect(status.result).toMatchObject({
      kind: 'codex',
      'primary.window': '5h',
      'primary.used_percent': '12.5',
      'secondary.window': '7d',
      'secondary.used_percent': '40',
    });
    expect(status.result['primary.resets_at']).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('codex without rollout files answers with a parse_status note', async () => {
    const home = tempDir('iop-codex-home-');
    cleanups.push(home.remove);
    adapter = testAdapter(
      cliInstance({ codex: { command: replay, outputFormat: 'codex-json', env: { CODEX_HOME: home.path } } }),
    );
    const status = await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'codex' }), {
      signal: signal(),
    });
    expect(status.result.parse_status).toContain('no rate_limits');
  });

  it('claude: returns the raw `claude -p /usage` output with parse_status when it has no limits (recorded)', async () => {
    adapter = testAdapter(
      cliInstance({
        claude: {
          command: replay,
          outputFormat: 'claude-stream-json',
          env: { IOP_REPLAY_TRANSCRIPT: path.join(transcriptsDir, 'claude/usage-command.txt') },
        },
      }),
    );
    const status = await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'claude' }), {
      signal: signal(),
    });
    expect(status.ok).toBe(true);
    expect(status.result.parse_status).toContain('could not parse');
    expect(status.result.raw).toContain('Total cost:');
  });

  it('claude: prefers rate_limit_event information seen in stream-json output', async () => {
    const scratch = tempDir('iop-claude-');
    cleanups.push(scratch.remove);
    // The documented shape of the event (subscription auth only, so not recordable against a fake server).
    const line = JSON.stringify({
      type: 'rate_limit_event',
      rate_limit_info: { status: 'allowed', resetsAt: 1796000000, rateLimitType: 'five_hour' },
    });
    const transcript = path.join(scratch.path, 'limits.jsonl');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      transcript,
      `${line}\n${JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'ok', session_id: 's' })}\n`,
    );
    adapter = testAdapter(
      cliInstance({
        claude: { command: replay, outputFormat: 'claude-stream-json', args: ['--transcript', transcript] },
      }),
    );
    await collect(adapter, request('claude', 'hi'));
    const status = await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'claude' }), {
      signal: signal(),
    });
    expect(status.result).toMatchObject({
      source: 'rate_limit_event',
      window: 'five_hour',
      status: 'allowed',
      resets_at: new Date(1796000000 * 1000).toISOString(),
    });
  });

  it('parses percentages, windows and reset times out of usage text', () => {
    expect(
      parseUsageText(
        'Current session  ███░░ 42% used · Resets 5pm (UTC)\nCurrent week (all models): 10% left, resets Dec 3',
      ),
    ).toEqual({
      'limit.0.window': 'Current session',
      'limit.0.used_percent': '42',
      'limit.0.resets_at': '5pm (UTC)',
      'limit.1.window': 'Current week (all models)',
      'limit.1.used_percent': '90',
      'limit.1.resets_at': 'Dec 3',
    });
    expect(parseUsageText('Total cost: $0.0000')).toBeUndefined();
  });

  it('maps rate_limit_info fields and parser hands them out', () => {
    const parser = createClaudeStreamJsonParser();
    const parsed = parser.line(
      JSON.stringify({
        type: 'rate_limit_event',
        rate_limit_info: {
          status: 'allowed_warning',
          resetsAt: 1796000000,
          rateLimitType: 'seven_day',
          utilization: 0.8,
        },
      }),
    );
    expect(claudeRateLimitFields(parsed.rateLimit ?? {})).toMatchObject({
      window: 'seven_day',
      status: 'allowed_warning',
      used_percent: '80',
    });
  });

  it('refuses targets that have no usage status', async () => {
    adapter = testAdapter(cliInstance({ cline: { command: replay, outputFormat: 'cline-json' } }));
    expect(
      await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'cline' }), {
        signal: signal(),
      }),
    ).toMatchObject({
      ok: false,
      error: 'status check not supported for target cline',
    });
  });
});
