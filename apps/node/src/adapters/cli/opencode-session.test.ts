// The opencode-sse mode against recorded `opencode serve` /event streams, replayed by
// packages/testkit/bin/replay-opencode-serve.mjs (which answers the same HTTP calls as the real server).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { create, type RunEventPart } from '@iop/wire';
import type { Adapter } from '../adapter.js';
import { parseOpencodeArgs } from './opencode-session.js';
import {
  cliInstance,
  collect,
  request,
  tempDir,
  terminal,
  testAdapter,
  testkitBin,
  texts,
  transcriptsDir,
} from './test-support/cli-test-kit.js';

const events = (name: string) => path.join(transcriptsDir, 'opencode', name);

describe('opencode-sse sessions', () => {
  let adapter: Adapter | undefined;
  let scratch: { path: string; remove: () => void };
  let record: string;

  beforeEach(() => {
    scratch = tempDir('iop-opencode-');
    record = path.join(scratch.path, 'http.jsonl');
  });

  afterEach(async () => {
    await adapter?.close();
    adapter = undefined;
    scratch.remove();
  });

  const calls = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { method?: string; url: string; body?: Record<string, unknown> })
      .filter((entry) => entry.method !== undefined);

  const opencode = (extra: string[] = []) => ({
    command: path.join(testkitBin, 'replay-opencode-serve.mjs'),
    mode: 'opencode-sse',
    args: [
      '--model',
      'fake/fake-model',
      '--title',
      'iop-test',
      '--events',
      [
        events('serve-turn1-events.jsonl'),
        events('serve-turn2-events.jsonl'),
        events('serve-tool-events.jsonl'),
      ].join(','),
      '--record',
      record,
      ...extra,
    ],
  });

  it('streams text deltas of two turns in one server session and completes on session.idle', async () => {
    adapter = testAdapter(cliInstance({ opencode: opencode() }));
    const first = await collect(adapter, request('opencode', 'Convert token iop_opencode_one'));
    expect(texts(first)).toBe('IOP_OPENCODE_ONE_OK');
    expect(terminal(first)).toMatchObject({ type: 'complete', detail: 'idle' });
    const second = await collect(adapter, request('opencode', 'Now convert iop_opencode_two'));
    expect(texts(second)).toBe('IOP_OPENCODE_TWO_OK (history: IOP_OPENCODE_ONE)');
    const third = await collect(adapter, request('opencode', 'RUN:echo hello_from_tool iop_opencode_tool'));
    const call = third.find(
      (part): part is Extract<RunEventPart, { type: 'tool-call' }> => part.type === 'tool-call',
    );
    expect(call?.call.name).toBe('bash');
    expect(
      third.some(
        (part) =>
          part.type === 'progress' && part.kind === 'tool' && part.message.includes('hello_from_tool'),
      ),
    ).toBe(true);
    const posted = calls().filter((entry) => entry.method === 'POST');
    expect(posted.map((entry) => entry.url.replace(/ses_\w+/, 'S'))).toEqual([
      '/session',
      '/session/S/prompt_async',
      '/session/S/prompt_async',
      '/session/S/prompt_async',
    ]);
    expect(posted[0]?.body).toEqual({ title: 'iop-test' });
    expect(posted[1]?.body).toEqual({
      model: { providerID: 'fake', modelID: 'fake-model' },
      parts: [{ type: 'text', text: 'Convert token iop_opencode_one' }],
    });
  });

  it('cancel aborts the turn over HTTP and keeps the server for the next prompt', async () => {
    adapter = testAdapter(cliInstance({ opencode: opencode(['--stall']) }));
    const controller = new AbortController();
    const parts: RunEventPart[] = [];
    for await (const part of adapter.run(request('opencode', 'Convert token iop_opencode_one'), {
      signal: controller.signal,
    })) {
      parts.push(part);
      if (part.type === 'text-delta') controller.abort('user cancel');
    }
    expect(terminal(parts)).toEqual({ type: 'cancelled', reason: 'user cancel' });
    expect(calls().some((entry) => entry.url.endsWith('/abort'))).toBe(true);
    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    expect(sessions.result).toMatchObject({ sessions: '1', 'session.0.mode': 'persistent' });
    expect(await adapter.terminateSession('opencode', 'default')).toBe(true);
  });

  it('protects the server with a per-session password: every adapter call authenticates, others get 401', async () => {
    adapter = testAdapter(cliInstance({ opencode: opencode() }));
    expect(terminal(await collect(adapter, request('opencode', 'iop_opencode_one')))).toMatchObject({
      type: 'complete',
    });
    const entries = readFileSync(record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { listening?: number; auth?: boolean; unauthorized?: boolean });
    const started = entries.find((entry) => entry.listening !== undefined);
    expect(started?.auth).toBe(true);
    expect(entries.some((entry) => entry.unauthorized)).toBe(false);
    const anonymous = await fetch(`http://127.0.0.1:${started?.listening}/global/health`);
    expect(anonymous.status).toBe(401);
  });

  it('a server killed during its start fails that run, and the next run of the session starts a new one', async () => {
    const marker = path.join(scratch.path, 'hang.pid');
    adapter = testAdapter(cliInstance({ opencode: opencode(['--hang-start-once', marker]) }));
    const first = collect(adapter, request('opencode', 'iop_opencode_one'));
    let pid = 0;
    for (let waited = 0; pid === 0 && waited < 5000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      try {
        pid = Number(readFileSync(marker, 'utf8').trim());
      } catch {
        // Not started yet.
      }
    }
    process.kill(pid, 'SIGKILL');
    expect(terminal(await first)).toMatchObject({ type: 'error', code: 'spawn_failed' });
    const second = await collect(adapter, request('opencode', 'Convert token iop_opencode_one'));
    expect(texts(second)).toBe('IOP_OPENCODE_ONE_OK');
    expect(terminal(second)).toMatchObject({ type: 'complete' });
  });

  it('a caller that cancels during the cold start only stops waiting: the start serves the next run', async () => {
    adapter = testAdapter(cliInstance({ opencode: opencode(['--slow-start-ms', '600']) }));
    const controller = new AbortController();
    setTimeout(() => controller.abort('impatient'), 100);
    const cancelled = await collect(adapter, request('opencode', 'iop_opencode_one'), controller.signal);
    expect(terminal(cancelled)).toEqual({ type: 'cancelled', reason: 'impatient' });
    const next = await collect(adapter, request('opencode', 'Convert token iop_opencode_one'));
    expect(texts(next)).toBe('IOP_OPENCODE_ONE_OK');
    const starts = readFileSync(record, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"listening"'));
    expect(starts).toHaveLength(1);
  });

  it('splits profile args into HTTP options and serve args', () => {
    expect(
      parseOpencodeArgs([
        'serve',
        '--hostname',
        '127.0.0.2',
        '--port',
        '0',
        '--model=prov/some/model',
        '--dangerously-skip-permissions',
        '--title',
        't',
        '--agent',
        'build',
        '--log-level',
        'WARN',
      ]),
    ).toEqual({
      hostname: '127.0.0.2',
      model: { providerID: 'prov', modelID: 'some/model' },
      agent: 'build',
      title: 't',
      autoApprove: true,
      serveArgs: ['--log-level', 'WARN'],
    });
    expect(() => parseOpencodeArgs(['--model', 'nomodel'])).toThrow('provider/model');
  });
});
