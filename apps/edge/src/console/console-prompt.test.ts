import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { ConsolePrompt } from './console-prompt.js';
import { OpsConsole } from './ops-console.js';
import { FakeEdgeService } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';

function setup(terminal: boolean): {
  prompt: ConsolePrompt;
  ops: OpsConsole;
  input: PassThrough;
  bus: FakeEventBus;
  text: () => string;
} {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = '';
  output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const prompt = new ConsolePrompt({ input, output, terminal });
  const bus = new FakeEventBus();
  const ops = new OpsConsole({
    service: FakeEdgeService.forConsole(bus),
    events: bus,
    write: prompt.writeLine,
    defaults: { adapter: 'cli', target: 't', sessionId: 's' },
  });
  ops.start();
  return { prompt, ops, input, bus, text: () => text };
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('ConsolePrompt', () => {
  it('ends the loop on stop() while waiting for input', async () => {
    const { prompt, ops } = setup(false);
    const loop = prompt.run(ops);
    await new Promise((resolve) => setTimeout(resolve, 5));
    prompt.stop();
    await loop;
    await ops.close();
  });

  it('shows the prompt on a terminal and redraws it under asynchronous output', async () => {
    const { prompt, ops, bus, text, input } = setup(true);
    const loop = prompt.run(ops);
    await until(() => text().includes('edge> '));
    bus.publish({
      type: 'node',
      event: { kind: 'connected', nodeId: 'n1', alias: 'n1', reason: 'registered', atUnixMs: 1 },
    });
    await until(() => text().includes('connected node=n1'));
    expect(text()).toContain('\r\x1b[K[node0-evt] connected node=n1 reason=registered\n');
    expect(text().lastIndexOf('edge> ')).toBeGreaterThan(text().indexOf('connected node=n1'));
    input.write('/exit\r');
    await loop;
    await ops.close();
  });
});
