import { afterEach, describe, expect, it } from '@jest/globals';
import type { Adapter } from '../adapter.js';
import { cliInstance, collect, request, terminal, testAdapter, texts } from './test-support/cli-test-kit.js';

// One-shot fake-cli: the prompt is a command-line argument (`{prompt}`), answered and then the process exits.
const argvProfile = { command: 'bin/iop-fake-cli', mode: 'oneshot', args: ['{prompt}'] };

describe('cli adapter against hostile input', () => {
  let adapter: Adapter | undefined;

  afterEach(async () => {
    await adapter?.close();
    adapter = undefined;
  });

  it('passes a prompt that looks like a flag to the CLI as text', async () => {
    adapter = testAdapter(cliInstance({ argv: argvProfile }));
    const parts = await collect(adapter, request('argv', '--version'));
    expect(terminal(parts)).toMatchObject({ type: 'complete' });
    expect(texts(parts)).toContain('PROMPT: --version\n');
    expect(texts(parts)).not.toContain('fake-cli 0.0.0-fake');
  });

  it('refuses a workspace outside workspace_roots with workspace_not_allowed (caller fault)', async () => {
    adapter = testAdapter(cliInstance({ argv: argvProfile }));
    for (const workspace of ['/etc', '/']) {
      const parts = await collect(adapter, request('argv', 'iop_ws', { workspace }));
      expect(terminal(parts)).toMatchObject({
        type: 'error',
        code: 'workspace_not_allowed',
        retryable: false,
      });
    }
    await adapter.close();
    adapter = testAdapter(cliInstance({ argv: argvProfile }, { workspaceRoots: ['/etc'] }));
    expect(terminal(await collect(adapter, request('argv', 'iop_ws', { workspace: '/etc' })))).toMatchObject({
      type: 'complete',
    });
  });

  it('fails a run whose CLI prints a 50 MB line, cleanly and without stalling the node', async () => {
    adapter = testAdapter(
      cliInstance({
        flood: {
          command: 'bin/iop-fake-cli',
          mode: 'oneshot',
          args: ['--long-line-bytes', String(50_000_000)],
        },
      }),
    );
    let worstLagMs = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      worstLagMs = Math.max(worstLagMs, now - last - 20);
      last = now;
    }, 20);
    const started = performance.now();
    try {
      const parts = await collect(adapter, request('flood', 'go'));
      expect(terminal(parts)).toMatchObject({
        type: 'error',
        code: 'output_line_too_long',
        retryable: false,
      });
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      clearInterval(ticker);
    }
    // The event loop kept turning (heartbeats of the node link run on it).
    expect(worstLagMs).toBeLessThan(1000);
    // The session still serves runs afterwards.
    const after = await collect(adapter, request('flood', 'again'));
    expect(terminal(after)).toMatchObject({ type: 'error', code: 'output_line_too_long' });
  });
});
