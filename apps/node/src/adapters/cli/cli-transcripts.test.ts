// Each one-shot output format against real recorded CLI output (packages/testkit/transcripts), replayed by
// packages/testkit/bin/replay-cli.mjs: mapping to run events, session continuation through resume_args, usage.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { create, type CliProfile, type RunEventPart } from '@iop/wire';
import type { Adapter } from '../adapter.js';
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
  waitGone,
} from './test-support/cli-test-kit.js';

const replay = path.join(testkitBin, 'replay-cli.mjs');
const transcript = (cli: string, file: string) => path.join(transcriptsDir, cli, file);

interface Invocation {
  argv: string[];
  stdin: string;
  cwd: string;
  pid: number;
}

function invocations(file: string): Invocation[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Invocation);
}

function ofType<T extends RunEventPart['type']>(
  parts: RunEventPart[],
  type: T,
): Array<Extract<RunEventPart, { type: T }>> {
  return parts.filter((part): part is Extract<RunEventPart, { type: T }> => part.type === type);
}

function recordedField(cli: string, file: string, key: string): string {
  for (const line of readFileSync(transcript(cli, file), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const value = (JSON.parse(line) as Record<string, unknown>)[key];
    if (typeof value === 'string') return value;
  }
  throw new Error(`no ${key} in ${cli}/${file}`);
}

describe('one-shot CLI output formats (recorded transcripts)', () => {
  let adapter: Adapter | undefined;
  let scratch: { path: string; remove: () => void };
  let record: string;

  beforeEach(() => {
    scratch = tempDir('iop-replay-');
    record = path.join(scratch.path, 'invocations.jsonl');
  });

  afterEach(async () => {
    await adapter?.close();
    adapter = undefined;
    scratch.remove();
  });

  const profile = (
    cli: string,
    first: string,
    resume: string | undefined,
    fields: Partial<CliProfile>,
    args: string[],
    resumeArgs: string[] = [],
  ) => ({
    command: replay,
    ...fields,
    args: ['--transcript', transcript(cli, first), '--record', record, ...args],
    resumeArgs: resume ? ['--transcript', transcript(cli, resume), '--record', record, ...resumeArgs] : [],
  });

  describe('claude-stream-json', () => {
    const claudeArgs = ['-p', '--output-format', 'stream-json', '--verbose'];
    const claude = (
      first = 'turn1.jsonl',
      resume: string | undefined = 'turn2-resume.jsonl',
      extra: string[] = [],
    ) =>
      profile(
        'claude',
        first,
        resume,
        { outputFormat: 'claude-stream-json' },
        [...claudeArgs, ...extra, '--session-id', '{session_id}'],
        [...claudeArgs, '--resume', '{session_id}'],
      );

    it('maps text, usage and cost, starts with --session-id and resumes with the recorded session id', async () => {
      adapter = testAdapter(cliInstance({ claude: claude() }), { randomId: () => 'generated-uuid' });
      const first = await collect(adapter, request('claude', 'Convert token iop_claude_one'));
      expect(texts(first)).toBe('IOP_CLAUDE_ONE_OK');
      const [usage] = ofType(first, 'usage');
      expect(usage?.usage.promptTokens).toBeGreaterThan(0);
      expect(usage?.usage.costUsd).toBeGreaterThan(0);
      expect(terminal(first)).toMatchObject({ type: 'complete', detail: 'result' });

      const second = await collect(adapter, request('claude', 'Now convert iop_claude_two'));
      expect(texts(second)).toBe('IOP_CLAUDE_TWO_OK (history: IOP_CLAUDE_ONE)');
      const [call1, call2] = invocations(record);
      expect(call1?.argv.slice(-2)).toEqual(['--session-id', 'generated-uuid']);
      expect(call1?.stdin).toBe('Convert token iop_claude_one');
      expect(call2?.argv.slice(-2)).toEqual([
        '--resume',
        recordedField('claude', 'turn1.jsonl', 'session_id'),
      ]);
      expect(call2?.cwd).toBe(call1?.cwd);
    });

    it('maps a Bash tool call and its result', async () => {
      adapter = testAdapter(cliInstance({ claude: claude('tool.jsonl', undefined) }));
      const parts = await collect(adapter, request('claude', 'RUN:echo hello_from_tool iop_claude_tool'));
      const [call] = ofType(parts, 'tool-call');
      expect(call?.call.name).toBe('Bash');
      expect(JSON.parse(call?.call.argumentsJson ?? '{}')).toEqual({
        command: 'echo hello_from_tool iop_claude_tool',
      });
      expect(ofType(parts, 'progress').find((part) => part.kind === 'tool')?.message).toBe(
        'hello_from_tool iop_claude_tool',
      );
      expect(texts(parts)).toBe('TOOL_OUTPUT: hello_from_tool iop_claude_tool');
    });

    it('streams partial-message deltas without repeating the full message', async () => {
      adapter = testAdapter(cliInstance({ claude: claude('partial-messages.jsonl', undefined) }));
      const parts = await collect(adapter, request('claude', 'Convert iop_claude_partial please'));
      // The delta arrives first; the full assistant message that follows repeats it and must be skipped.
      expect(ofType(parts, 'text-delta')).toHaveLength(1);
      expect(texts(parts)).toBe('IOP_CLAUDE_PARTIAL_OK');
    });

    it('kills a CLI that printed its result but hangs, after result_grace_ms, and completes normally', async () => {
      adapter = testAdapter(
        cliInstance({ claude: { ...claude('turn1.jsonl', undefined, ['--hang']), resultGraceMs: 300 } }),
      );
      const started = Date.now();
      const parts = await collect(adapter, request('claude', 'iop_claude_one'));
      expect(terminal(parts)).toMatchObject({ type: 'complete', detail: 'result' });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await waitGone(invocations(record)[0]?.pid ?? 0)).toBe(true);
    });

    it('reports a CLI that fails without a result as cli_failed with its stderr', async () => {
      adapter = testAdapter(
        cliInstance({
          claude: profile('claude', 'usage-command.txt', undefined, { outputFormat: 'claude-stream-json' }, [
            '--exit-code',
            '3',
            '--stderr',
            'Invalid API key',
          ]),
        }),
      );
      const parts = await collect(adapter, request('claude', 'x'));
      expect(terminal(parts)).toMatchObject({ type: 'error', code: 'cli_failed', retryable: true });
      expect(terminal(parts)).toMatchObject({ message: expect.stringContaining('Invalid API key') });
    });

    it('cancel kills the one-shot process and keeps the session for the next run', async () => {
      adapter = testAdapter(
        cliInstance({
          claude: claude('turn1.jsonl', 'turn2-resume.jsonl', ['--hang', '--line-delay-ms', '400']),
        }),
      );
      const controller = new AbortController();
      const pending = collect(adapter, request('claude', 'iop_claude_one'), controller.signal);
      // Cancel once the CLI is up (it records its invocation first) and busy printing.
      for (let waited = 0; !existsSync(record) && waited < 10_000; waited += 20)
        await new Promise((resolve) => setTimeout(resolve, 20));
      setTimeout(() => controller.abort('stop'), 300);
      expect(terminal(await pending)).toEqual({ type: 'cancelled', reason: 'stop' });
      expect(await waitGone(invocations(record)[0]?.pid ?? 0)).toBe(true);
      const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
        signal: new AbortController().signal,
      });
      expect(sessions.result).toMatchObject({ sessions: '1', 'session.0.mode': 'oneshot' });
    });
  });

  describe('codex-json', () => {
    const codex = () =>
      profile(
        'codex',
        'turn1.jsonl',
        'turn2-resume.jsonl',
        { outputFormat: 'codex-json' },
        ['exec', '--json', '--skip-git-repo-check', '{prompt}'],
        ['exec', '--json', '--skip-git-repo-check', 'resume', '{thread_id}', '{prompt}'],
      );

    it('maps agent messages, resumes by thread id and reports per-turn usage from cumulative totals', async () => {
      adapter = testAdapter(cliInstance({ codex: codex() }));
      const first = await collect(adapter, request('codex', 'Convert token iop_codex_one'));
      expect(texts(first)).toBe('IOP_CODEX_ONE_OK');
      const firstUsage = ofType(first, 'usage')[0]?.usage;
      expect(terminal(first)).toMatchObject({ type: 'complete', detail: 'result' });
      const second = await collect(adapter, request('codex', 'Now convert iop_codex_two'));
      expect(texts(second)).toBe('IOP_CODEX_TWO_OK (history: IOP_CODEX_ONE)');
      const secondUsage = ofType(second, 'usage')[0]?.usage;
      const totals = readFileSync(transcript('codex', 'turn2-resume.jsonl'), 'utf8');
      const cumulative = (
        JSON.parse(totals.split('\n').filter((line) => line.includes('turn.completed'))[0] ?? '{}') as {
          usage: { input_tokens: number };
        }
      ).usage.input_tokens;
      expect(secondUsage?.promptTokens).toBe(cumulative - (firstUsage?.promptTokens ?? 0));
      const [call1, call2] = invocations(record);
      expect(call1?.argv.slice(-1)).toEqual(['Convert token iop_codex_one']);
      expect(call1?.stdin).toBe('');
      // The prompt always follows `--`, so a prompt starting with '-' is never read as an option.
      expect(call1?.argv.slice(-2)).toEqual(['--', 'Convert token iop_codex_one']);
      expect(call2?.argv.slice(-4)).toEqual([
        'resume',
        recordedField('codex', 'turn1.jsonl', 'thread_id'),
        '--',
        'Now convert iop_codex_two',
      ]);
    });

    it('maps a command execution to a tool call and its output', async () => {
      adapter = testAdapter(
        cliInstance({
          codex: profile('codex', 'tool.jsonl', undefined, { outputFormat: 'codex-json' }, ['{prompt}']),
        }),
      );
      const parts = await collect(adapter, request('codex', 'RUN:echo hello_from_tool iop_codex_tool'));
      const [call] = ofType(parts, 'tool-call');
      expect(call?.call.name).toBe('exec_command');
      expect(call?.call.argumentsJson).toContain('echo hello_from_tool iop_codex_tool');
      const tool = ofType(parts, 'progress').find((part) => part.kind === 'tool');
      expect(tool).toMatchObject({ message: 'hello_from_tool iop_codex_tool\n', fields: { exit_code: '0' } });
      expect(texts(parts)).toContain('TOOL_OUTPUT:');
    });
  });

  describe('cline-json', () => {
    it('maps text and usage of a plain turn', async () => {
      adapter = testAdapter(
        cliInstance({
          cline: profile('cline', 'turn1.jsonl', undefined, { outputFormat: 'cline-json' }, [
            '--json',
            '{prompt}',
          ]),
        }),
      );
      const parts = await collect(adapter, request('cline', 'Convert token iop_cline_one'));
      expect(texts(parts)).toBe('IOP_CLINE_ONE_OK');
      expect(ofType(parts, 'usage')[0]?.usage.promptTokens).toBeGreaterThan(0);
      expect(terminal(parts)).toMatchObject({ type: 'complete', detail: 'result' });
    });

    it('maps run_commands and takes the submit_and_exit summary as the answer with -y', async () => {
      adapter = testAdapter(
        cliInstance({
          cline: profile('cline', 'tool-yolo.jsonl', undefined, { outputFormat: 'cline-json' }, [
            '-y',
            '--json',
            '{prompt}',
          ]),
        }),
      );
      const parts = await collect(adapter, request('cline', 'RUN:echo hello_from_tool iop_cline_tool'));
      const names = ofType(parts, 'tool-call').map((part) => part.call.name);
      expect(names).toEqual(['run_commands', 'submit_and_exit']);
      expect(
        ofType(parts, 'progress').some(
          (part) => part.kind === 'tool' && part.message.includes('hello_from_tool iop_cline_tool'),
        ),
      ).toBe(true);
      expect(texts(parts)).toContain('TOOL_OUTPUT:');
      expect(terminal(parts)).toMatchObject({ type: 'complete' });
    });
  });

  describe('opencode-json', () => {
    it('maps text, tool use and step usage, and resumes with -s <sessionID>', async () => {
      adapter = testAdapter(
        cliInstance({
          opencode: profile(
            'opencode',
            'run-turn1.jsonl',
            'run-tool.jsonl',
            { outputFormat: 'opencode-json' },
            ['run', '--format', 'json'],
            ['run', '--format', 'json', '-s', '{session_id}'],
          ),
        }),
      );
      const first = await collect(adapter, request('opencode', 'Convert token iop_opencode_one'));
      expect(texts(first)).toBe('IOP_OPENCODE_ONE_OK');
      expect(ofType(first, 'usage')[0]?.usage.promptTokens).toBeGreaterThan(0);
      const second = await collect(
        adapter,
        request('opencode', 'RUN:echo hello_from_tool iop_opencode_tool'),
      );
      expect(ofType(second, 'tool-call')[0]?.call.name).toBe('bash');
      expect(ofType(second, 'progress').find((part) => part.kind === 'tool')?.message).toBe(
        'hello_from_tool iop_opencode_tool\n',
      );
      const [call1, call2] = invocations(record);
      expect(call1?.stdin).toBe('Convert token iop_opencode_one');
      expect(call2?.argv.slice(-2)).toEqual([
        '-s',
        recordedField('opencode', 'run-turn1.jsonl', 'sessionID'),
      ]);
    });
  });

  describe('antigravity-print (synthetic transcript: agy is not installable)', () => {
    it('prints text and continues with --conversation <id> taken from the output', async () => {
      adapter = testAdapter(
        cliInstance({
          antigravity: {
            ...profile(
              'antigravity',
              'synthetic-print-turn1.txt',
              'synthetic-print-turn2.txt',
              { mode: 'antigravity-print' },
              ['--dangerously-skip-permissions', '--print', '{prompt}'],
              ['--conversation', '{conversation_id}', '--print', '{prompt}'],
            ),
          },
        }),
      );
      expect(texts(await collect(adapter, request('antigravity', 'iop_agy_one')))).toBe('IOP_AGY_ONE_OK\n');
      expect(texts(await collect(adapter, request('antigravity', 'iop_agy_two')))).toBe(
        'IOP_AGY_TWO_OK (history: IOP_AGY_ONE)\n',
      );
      expect(invocations(record)[1]?.argv.slice(-5)).toEqual([
        '--conversation',
        '7f1c2d3e-agy-conv-0001',
        '--print',
        '--',
        'iop_agy_two',
      ]);
    });
  });

  describe('text', () => {
    it('streams every line as text and completes on exit', async () => {
      adapter = testAdapter(
        cliInstance({ plain: profile('claude', 'usage-command.txt', undefined, {}, ['{prompt}']) }),
      );
      const parts = await collect(adapter, request('plain', 'hi'));
      expect(texts(parts)).toBe(readFileSync(transcript('claude', 'usage-command.txt'), 'utf8'));
      expect(terminal(parts)).toMatchObject({ type: 'complete', detail: 'exit' });
    });
  });
});

describe('resume_args', () => {
  it('are a complete list when they name {prompt} or begin like args, else extra flags after args', async () => {
    const { resumeTemplate } = await import('./oneshot-session.js');
    expect(resumeTemplate(['-p', '--verbose'], ['--resume', '{session_id}'])).toEqual([
      '-p',
      '--verbose',
      '--resume',
      '{session_id}',
    ]);
    expect(resumeTemplate(['exec', '{prompt}'], ['exec', 'resume', '{thread_id}', '{prompt}'])).toEqual([
      'exec',
      'resume',
      '{thread_id}',
      '{prompt}',
    ]);
    expect(
      resumeTemplate(['--print', '{prompt}'], ['--conversation', '{conversation_id}', '--print', '{prompt}']),
    ).toEqual(['--conversation', '{conversation_id}', '--print', '{prompt}']);
  });
});
