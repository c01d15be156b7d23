import { afterEach, describe, expect, it } from '@jest/globals';
import { create } from '@iop/wire';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { OpsConsole } from './ops-console.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';

const DISCOVERED: NodeDiscovered = {
  backends: [
    { kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', models: ['a', 'b'], version: '', loadedModels: [] },
  ],
  clis: [{ name: 'codex', path: '/bin/codex', version: 'codex-cli 0.46.0' }],
  host: {
    os: 'linux',
    arch: 'x64',
    cpuCores: 4,
    memoryBytes: 1,
    gpus: [],
    agentsSeparateUser: false,
    agentUser: '',
    agentWorkspaceRoot: '',
  },
  discoveredAtUnixMs: 1,
};

const consoles: OpsConsole[] = [];
afterEach(async () => {
  await Promise.all(consoles.splice(0).map((ops) => ops.close()));
});

function setup() {
  const bus = new FakeEventBus();
  const service = FakeEdgeService.forConsole(bus);
  service.nodes = [node('n1', 'n1', 1_700_000_000_000)];
  const lines: string[] = [];
  const ops = new OpsConsole({
    service,
    events: bus,
    write: (line) => lines.push(line),
    defaults: { node: '', adapter: 'cli', target: 'fake-cli', sessionId: 'default' },
  });
  consoles.push(ops);
  ops.start();
  return { bus, service, ops, lines };
}

async function waitForLine(lines: string[], pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!lines.some((line) => pattern.test(line))) {
    if (Date.now() > deadline) throw new Error(`no line matched ${pattern}; got:\n${lines.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('console discovery', () => {
  it('prints the summary line when a node reports what it discovered', async () => {
    const { bus, service, lines } = setup();
    service.nodes = [{ ...node('n1', 'n1', 1_700_000_000_000), discovered: DISCOVERED }];
    bus.publish({
      type: 'node',
      event: { kind: 'discovered', nodeId: 'n1', alias: 'n1', reason: 'reported', atUnixMs: 2 },
    });
    await waitForLine(lines, /discovered/);
    expect(lines).toContain(
      '[node0-evt] discovered node=n1 ollama: 2 models · codex 0.46.0 · agents share node user',
    );
  });

  it("strips a node's escape sequences from what it discovered and from its run text", async () => {
    const { bus, service, ops, lines } = setup();
    const ESC = '\u001b';
    service.nodes = [
      {
        ...node('n1', 'n1', 1_700_000_000_000),
        discovered: {
          ...DISCOVERED,
          clis: [
            { name: 'codex', path: '/bin/codex', version: `codex-cli 0.46.0${ESC}]0;pwned\u0007${ESC}[8m` },
          ],
        },
      },
    ];
    bus.publish({
      type: 'node',
      event: { kind: 'discovered', nodeId: 'n1', alias: 'n1', reason: 'reported', atUnixMs: 2 },
    });
    await waitForLine(lines, /discovered/);
    expect(lines).toContain(
      '[node0-evt] discovered node=n1 ollama: 2 models · codex 0.46.0 · agents share node user',
    );
    // An echoing run: the answer text carries the sequences back from the "node".
    service.script = undefined;
    await ops.handleLine(`hello${ESC}]52;c;aGk=\u0007${ESC}[1A\u009b2J\tworld`);
    expect(lines).toContain('[node0-msg] echo: hello\tworld');
    // eslint-disable-next-line no-control-regex -- no control character may be left
    expect(lines.join('\n')).not.toMatch(/[\u001b\u0007\u009b]/);
  });

  it('/discover asks the selected node for a fresh pass and prints what it reported', async () => {
    const { service, ops, lines } = setup();
    service.commandHandler = (input) => {
      if (input.request.command !== 'discover') return undefined;
      // The node's report lands before its answer, as on the wire.
      service.nodes = [{ ...node('n1', 'n1', 1_700_000_000_000), discovered: DISCOVERED }];
      return create.nodeCommandResponse({ ok: true, result: { backends: 'ollama', clis: 'codex' } });
    };
    await ops.handleLine('/discover');
    expect(lines).toEqual(['[node0-discover] ollama: 2 models · codex 0.46.0 · agents share node user']);
  });

  it('/discover prints the node’s error when the node cannot discover', async () => {
    const { service, ops, lines } = setup();
    service.commandResponses.set(
      'discover',
      create.nodeCommandResponse({ ok: false, error: 'discovery is not enabled on this node' }),
    );
    await ops.handleLine('/discover');
    expect(lines.join('\n')).toContain('discovery is not enabled on this node');
  });
});
