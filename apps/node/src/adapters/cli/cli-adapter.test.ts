import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import type { Adapter } from '../adapter.js';
import { create } from '@iop/wire';
import {
  cliInstance,
  collect,
  readPid,
  request,
  tempDir,
  terminal,
  testAdapter,
  texts,
  waitGone,
} from './test-support/cli-test-kit.js';
import { isProcessGone } from './process-tree.js';

const fakeProfile = { command: 'bin/iop-fake-cli', mode: 'persistent', persistent: true, idleTimeoutMs: 250 };

describe('cli adapter with the persistent fake-cli', () => {
  let adapter: Adapter | undefined;
  const cleanups: Array<() => void> = [];

  afterEach(async () => {
    await adapter?.close();
    adapter = undefined;
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('streams the _OK and _TAIL lines and completes on idle timeout', async () => {
    adapter = testAdapter(cliInstance({ 'fake-cli': fakeProfile }));
    const parts = await collect(
      adapter,
      request('fake-cli', 'Convert token iop_manual_one and reply only with converted token'),
    );
    expect(parts).toEqual([
      { type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' },
      { type: 'text-delta', text: 'IOP_MANUAL_ONE_OK\n' },
      { type: 'text-delta', text: 'IOP_MANUAL_ONE_TAIL\n' },
      { type: 'complete', detail: 'idle-timeout', finishReason: 'stop', backendMs: expect.any(Number) },
    ]);
  });

  it('keeps one process per session across prompts and lists it as persistent', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    adapter = testAdapter(cliInstance({ 'fake-cli': { ...fakeProfile, args: ['--pid-file', pidFile] } }));
    expect(texts(await collect(adapter, request('fake-cli', 'iop_manual_one')))).toBe(
      'IOP_MANUAL_ONE_OK\nIOP_MANUAL_ONE_TAIL\n',
    );
    const firstPid = await readPid(pidFile);
    expect(texts(await collect(adapter, request('fake-cli', 'iop_manual_two')))).toBe(
      'IOP_MANUAL_TWO_OK\nIOP_MANUAL_TWO_TAIL\n',
    );
    expect(await readPid(pidFile)).toBe(firstPid);
    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    expect(sessions).toMatchObject({
      ok: true,
      result: {
        sessions: '1',
        'session.0.mode': 'persistent',
        'session.0.target': 'fake-cli',
        'session.0.session': 'default',
      },
    });
  });

  it('answers capabilities with the sorted targets and refuses status for fake-cli', async () => {
    adapter = testAdapter(cliInstance({ 'fake-cli': fakeProfile, alpha: fakeProfile }));
    const signal = new AbortController().signal;
    expect(
      await adapter.command(create.nodeCommandRequest({ command: 'capabilities' }), { signal }),
    ).toMatchObject({
      ok: true,
      result: { adapter: 'cli', targets: 'alpha,fake-cli' },
    });
    expect(
      await adapter.command(create.nodeCommandRequest({ command: 'status', target: 'fake-cli' }), { signal }),
    ).toMatchObject({ ok: false, error: 'status check not supported for target fake-cli' });
    expect(await adapter.command(create.nodeCommandRequest({ command: 'bogus' }), { signal })).toMatchObject({
      ok: false,
    });
    expect(await adapter.probeHealth(signal)).toMatchObject({ health: 'healthy' });
  });

  it('cancel interrupts the turn and keeps the session process', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    adapter = testAdapter(
      cliInstance({
        'fake-cli': {
          ...fakeProfile,
          idleTimeoutMs: 1000,
          args: ['--delay-ms', '500', '--pid-file', pidFile],
        },
      }),
    );
    const controller = new AbortController();
    const cancelled = collect(adapter, request('fake-cli', 'iop_slow'), controller.signal);
    // Interrupt once the process is up and has the prompt (a signal before its handler exists would kill it).
    const pid = await readPid(pidFile);
    setTimeout(() => controller.abort('user cancel'), 150);
    expect(terminal(await cancelled)).toEqual({ type: 'cancelled', reason: 'user cancel' });
    expect(isProcessGone(pid)).toBe(false);
    // The interrupted answer never arrives; the next prompt is answered by the same process.
    const next = await collect(adapter, request('fake-cli', 'iop_next'));
    expect(texts(next)).toBe('IOP_NEXT_OK\nIOP_NEXT_TAIL\n');
    expect(await readPid(pidFile)).toBe(pid);
  });

  it('terminateSession kills the whole tree, children included', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    const childFile = path.join(pids.path, 'child');
    adapter = testAdapter(
      cliInstance({
        'fake-cli': {
          ...fakeProfile,
          args: ['--spawn-child', '--child-pid-file', childFile, '--pid-file', pidFile],
        },
      }),
    );
    await collect(adapter, request('fake-cli', 'iop_tree'));
    const pid = await readPid(pidFile);
    const child = await readPid(childFile);
    expect(isProcessGone(child)).toBe(false);
    expect(await adapter.terminateSession('fake-cli', 'default')).toBe(true);
    expect(await waitGone(pid)).toBe(true);
    expect(await waitGone(child)).toBe(true);
    expect(await adapter.terminateSession('fake-cli', 'default')).toBe(false);
    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    expect(sessions.result).toEqual({ sessions: '0' });
  });

  it('the run deadline kills a tree that ignores SIGTERM and reports deadline_exceeded', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    const childFile = path.join(pids.path, 'child');
    adapter = testAdapter(
      cliInstance({
        'fake-cli': {
          ...fakeProfile,
          idleTimeoutMs: 5000,
          args: [
            '--delay-ms',
            '10000',
            '--ignore-sigterm',
            '--spawn-child',
            '--child-pid-file',
            childFile,
            '--pid-file',
            pidFile,
          ],
        },
      }),
      { killGraceMs: 200 },
    );
    // A deadline long enough for the process to start and write its pid files even on a loaded machine.
    const run = collect(adapter, request('fake-cli', 'iop_stuck', { timeoutMs: 2500 }));
    const [pid, child] = [await readPid(pidFile, 10_000), await readPid(childFile, 10_000)];
    expect(terminal(await run)).toMatchObject({ type: 'error', code: 'deadline_exceeded' });
    expect(await waitGone(pid)).toBe(true);
    expect(await waitGone(child)).toBe(true);
  });

  it('evicts the least recently used idle session at max_sessions; refuses only when all are busy', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    adapter = testAdapter(
      cliInstance(
        {
          'fake-cli': { ...fakeProfile, args: ['--pid-file', pidFile] },
          slow: { ...fakeProfile, idleTimeoutMs: 10_000, args: ['--delay-ms', '5000'] },
        },
        { maxSessions: 1 },
      ),
    );
    expect(terminal(await collect(adapter, request('fake-cli', 'iop_a', { sessionId: 'a' })))).toMatchObject({
      type: 'complete',
    });
    const pidA = await readPid(pidFile);
    expect(terminal(await collect(adapter, request('fake-cli', 'iop_b', { sessionId: 'b' })))).toMatchObject({
      type: 'complete',
    });
    // Session a was idle: it was closed (its process tree killed) to make room for b.
    expect(await waitGone(pidA)).toBe(true);
    const signal = new AbortController();
    const busyRun = collect(adapter, request('slow', 'iop_busy', { sessionId: 'busy' }), signal.signal);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await collect(adapter, request('fake-cli', 'iop_c', { sessionId: 'c' }));
    expect(refused[0]).toMatchObject({ type: 'start', sessionId: 'c' });
    expect(terminal(refused)).toMatchObject({ type: 'error', code: 'session_limit', retryable: true });
    signal.abort('test-done');
    expect(terminal(await busyRun)).toMatchObject({ type: 'cancelled' });
  });

  it('rejects a missing workspace, an unknown target and a request without a user message', async () => {
    adapter = testAdapter(cliInstance({ 'fake-cli': fakeProfile }));
    const missing = await collect(
      adapter,
      request('fake-cli', 'iop_x', { workspace: '/nonexistent/iop-workspace' }),
    );
    expect(missing).toHaveLength(2);
    expect(terminal(missing)).toMatchObject({ type: 'error', code: 'workspace_not_found', retryable: false });
    expect(terminal(await collect(adapter, request('nope', 'iop_x')))).toMatchObject({
      type: 'error',
      code: 'unknown_target',
    });
    expect(
      terminal(
        await collect(
          adapter,
          request('fake-cli', 'x', { messages: [create.chatMessage({ role: 'system', content: 'x' })] }),
        ),
      ),
    ).toMatchObject({ type: 'error', code: 'invalid_request' });
  });

  it('reports a command that does not exist as command_not_found', async () => {
    adapter = testAdapter(cliInstance({ ghost: { command: 'iop-no-such-cli', mode: 'persistent' } }));
    expect(terminal(await collect(adapter, request('ghost', 'hi')))).toMatchObject({
      type: 'error',
      code: 'command_not_found',
    });
  });

  it('a persistent process that exits ends the run and frees the session', async () => {
    adapter = testAdapter(
      cliInstance({ 'fake-cli': { ...fakeProfile, idleTimeoutMs: 3000, args: ['--exit-after', '1'] } }),
    );
    const parts = await collect(adapter, request('fake-cli', 'iop_bye'));
    expect(texts(parts)).toBe('IOP_BYE_OK\nIOP_BYE_TAIL\n');
    expect(terminal(parts)).toMatchObject({ type: 'complete', detail: 'exit' });
    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    expect(sessions.result.sessions).toBe('0');
  });

  it('runs a persistent CLI under a pseudo-terminal and strips the terminal echo controls', async () => {
    adapter = testAdapter(
      cliInstance({ tui: { ...fakeProfile, mode: 'persistent-lazy', terminal: true, idleTimeoutMs: 400 } }),
    );
    const output = texts(await collect(adapter, request('tui', 'iop_pty')));
    expect(output).toContain('IOP_PTY_OK\n');
    expect(output).toContain('IOP_PTY_TAIL\n');
    expect(output).not.toContain('\u001b');
  });

  it('closes a session that stayed idle past session_idle_ttl_ms', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    adapter = testAdapter(
      cliInstance(
        { 'fake-cli': { ...fakeProfile, args: ['--pid-file', pidFile] } },
        { sessionIdleTtlMs: 300 },
      ),
    );
    await collect(adapter, request('fake-cli', 'iop_ttl'));
    expect(await waitGone(await readPid(pidFile), 4000)).toBe(true);
    const sessions = await adapter.command(create.nodeCommandRequest({ command: 'sessions' }), {
      signal: new AbortController().signal,
    });
    expect(sessions.result.sessions).toBe('0');
  });

  it('close() kills every session', async () => {
    const pids = tempDir('iop-fake-');
    cleanups.push(pids.remove);
    const pidFile = path.join(pids.path, 'pid');
    const local = testAdapter(cliInstance({ 'fake-cli': { ...fakeProfile, args: ['--pid-file', pidFile] } }));
    await collect(local, request('fake-cli', 'iop_one'));
    await local.close();
    expect(await waitGone(await readPid(pidFile))).toBe(true);
    expect(terminal(await collect(local, request('fake-cli', 'iop_two')))).toMatchObject({
      type: 'error',
      code: 'adapter_closed',
    });
  });
});
