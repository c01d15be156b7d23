import { afterEach, describe, expect, it } from '@jest/globals';
import type { RunEventPart } from '@iop/wire';
import { runCli } from './run-cli.js';
import type { CliIo } from './command.js';
import { memoryIo } from './test-support/memory-io.js';
import { smokeOpenAICommand } from './smoke-openai.js';
import { textRun } from '../test-support/fake-edge-service.js';
import { startHarness, type Harness } from '../openai/test-support/openai-harness.js';

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function fakeIo(): { io: CliIo; stdout: () => string; stderr: () => string } {
  const { io, out, err } = memoryIo('/nonexistent', {}, '/nonexistent/iop-edge');
  return { io, stdout: out, stderr: err };
}

describe('iop-edge smoke openai', () => {
  it('passes against a working edge and prints timings for both checks', async () => {
    harness = await startHarness({ scripter: () => ({ parts: textRun(['po', 'ng']), delayMs: 2 }) });
    const { io, stdout } = fakeIo();
    const code = await runCli(
      ['smoke', 'openai', '--model', 'pooled', '--url', harness.url, '--api-key', 'k'],
      io,
      [smokeOpenAICommand],
    );
    expect(code).toBe(0);
    expect(stdout()).toMatch(/^PASS chat +total=\d+ms edge_overhead=[\d.]+ms finish=stop answer="pong"$/m);
    expect(stdout()).toMatch(
      /^PASS stream total=\d+ms first_token=\d+ms edge_overhead_to_first_byte=[\d.]+ms chunks=5 finish=stop answer="pong"$/m,
    );
    expect(stdout()).toContain('PASS 2/2 checks passed');
    expect(harness.service.submitted).toHaveLength(2);
  });

  it('fails with exit 1 on an unknown model, naming the error', async () => {
    harness = await startHarness();
    const { io, stdout } = fakeIo();
    const code = await runCli(
      ['smoke', 'openai', '--model', 'nope', '--url', harness.url, '--api-key', 'k'],
      io,
      [smokeOpenAICommand],
    );
    expect(code).toBe(1);
    expect(stdout()).toContain('FAIL chat');
    expect(stdout()).toContain("HTTP 404: model_not_found: The model 'nope' does not exist");
    expect(stdout()).toContain('FAIL 0/2 checks passed');
  });

  it('fails the stream check on a mid-stream error', async () => {
    const parts: RunEventPart[] = [
      { type: 'text-delta', text: 'po' },
      { type: 'error', code: 'backend_error', message: 'backend crashed', retryable: false, backendMs: 0 },
    ];
    let call = 0;
    harness = await startHarness({ scripter: () => ({ parts: call++ === 0 ? textRun(['pong']) : parts }) });
    const { io, stdout } = fakeIo();
    const code = await runCli(
      ['smoke', 'openai', '--model', 'pooled', '--url', harness.url, '--api-key', 'k'],
      io,
      [smokeOpenAICommand],
    );
    expect(code).toBe(1);
    expect(stdout()).toMatch(/^PASS chat/m);
    expect(stdout()).toMatch(/^FAIL stream .*stream error: backend crashed$/m);
  });

  it('reports an unreachable edge and requires --model', async () => {
    const { io, stdout, stderr } = fakeIo();
    const code = await runCli(
      [
        'smoke',
        'openai',
        '--model',
        'm',
        '--url',
        'http://127.0.0.1:9',
        '--api-key',
        'k',
        '--timeout-ms',
        '2000',
      ],
      io,
      [smokeOpenAICommand],
    );
    expect(code).toBe(1);
    expect(stdout()).toMatch(/^FAIL chat .*fetch failed/m);
    expect(await runCli(['smoke', 'openai'], io, [smokeOpenAICommand])).toBe(2);
    expect(stderr()).toContain('--model is required');
  });
});
