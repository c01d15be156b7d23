import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startEdgeRuntime, type EdgeRuntime } from '../edge-runtime.js';
import { silentLogger } from '../logging.js';
import { memoryIo } from './test-support/memory-io.js';
import { createConsoleCommand } from './console.js';
import { runCli } from './run-cli.js';

describe('iop-edge console', () => {
  let dir: string;
  let runtimes: EdgeRuntime[];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'iop-console-cli-'));
    runtimes = [];
    await writeFile(
      path.join(dir, 'edge.yaml'),
      [
        'edge: { listen: "127.0.0.1:0", data_dir: "state" }',
        'console: { node: "", adapter: cli, target: fake-cli, session_id: default }',
        '',
      ].join('\n'),
    );
  });

  afterEach(async () => {
    await Promise.all(runtimes.map((runtime) => runtime.stop()));
    await rm(dir, { recursive: true, force: true });
  });

  function command(signals?: (handler: (signal: string) => void) => () => void) {
    return createConsoleCommand({
      surfaces: [],
      terminal: false,
      createLogger: () => silentLogger,
      signals: signals ?? (() => () => undefined),
      startRuntime: async (options) => {
        const runtime = await startEdgeRuntime(options);
        runtimes.push(runtime);
        return runtime;
      },
    });
  }

  it('serves, runs console commands from stdin and shuts down at /exit', async () => {
    const { io, stdin, out } = memoryIo(dir);
    stdin.end('/nodes\n/session other\nhello\n/exit\n/nodes\n');
    expect(await runCli(['console'], io, [command()])).toBe(0);
    const lines = out().split('\n');
    expect(lines[0]).toBe(`iop-edge console (config ${path.join(dir, 'edge.yaml')})`);
    expect(lines[1]).toMatch(/^ {2}node transport {2}127\.0\.0\.1:\d+$/);
    expect(lines.slice(2)).toEqual([
      'type /help for commands, /exit to leave',
      'edge> /nodes',
      'no nodes connected',
      'edge> /session other',
      'session other',
      'edge> hello',
      expect.stringMatching(/^error: .*no node/i),
      'edge> /exit',
      '',
    ]);
    expect(runtimes).toHaveLength(1);
    // Stopped: the service refuses work after shutdown.
    await expect(
      runtimes[0]?.service.terminateSession({ adapter: 'a', target: 't', sessionId: 's' }),
    ).rejects.toMatchObject({
      code: 'shutting_down',
    });
  });

  it('shuts down at end of input', async () => {
    const { io, stdin, out } = memoryIo(dir);
    stdin.end();
    expect(await runCli(['console'], io, [command()])).toBe(0);
    expect(out()).toContain('type /help for commands');
  });

  it('shuts down on a termination signal while waiting at the prompt', async () => {
    const { io, out } = memoryIo(dir);
    let deliver: (signal: string) => void = () => undefined;
    let unsubscribed = false;
    const running = runCli(['console'], io, [
      command((handler) => {
        deliver = handler;
        return () => {
          unsubscribed = true;
        };
      }),
    ]);
    const deadline = Date.now() + 5000;
    while (!out().includes('type /help')) {
      if (Date.now() > deadline) throw new Error('console did not start');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    deliver('SIGTERM');
    expect(await running).toBe(0);
    expect(unsubscribed).toBe(true);
  });

  it('exits 1 with every issue of an invalid config, and on a start failure', async () => {
    await writeFile(path.join(dir, 'bad.yaml'), 'edge: { listen: 5 }\nconsole: { target: 7 }\n');
    let run = memoryIo(dir);
    expect(await runCli(['console', '--config', path.join(dir, 'bad.yaml')], run.io, [command()])).toBe(1);
    expect(run.err()).toMatch(/edge\.listen/);
    expect(run.err()).toMatch(/console\.target/);

    run = memoryIo(dir);
    const failing = createConsoleCommand({
      surfaces: [],
      createLogger: () => silentLogger,
      signals: () => () => undefined,
      startRuntime: () => Promise.reject(new Error('port in use')),
    });
    expect(await runCli(['console'], run.io, [failing])).toBe(1);
    expect(run.err()).toBe('iop-edge console: port in use\n');
  });
});
