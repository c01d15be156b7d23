import { afterEach, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { create } from '@iop/wire';
import { ServiceError } from '../service/errors.js';
import type { NodeSummary } from '../service/types.js';
import type { EventBus } from '../events/types.js';
import { ConsolePrompt } from './console-prompt.js';
import { OpsConsole, type ConsoleDefaults } from './ops-console.js';
import type { ProviderStatusView } from './console-format.js';
import { FakeEdgeService, fakeNode as node } from '../test-support/fake-edge-service.js';
import { FakeEventBus } from '../test-support/fake-event-bus.js';
import { README_TRANSCRIPT_BEFORE_STATUS } from './test-support/readme-transcript.js';

const DEFAULTS: ConsoleDefaults = { node: '', adapter: 'cli', target: 'fake-cli', sessionId: 'default' };

interface Harness {
  service: FakeEdgeService;
  bus: FakeEventBus;
  ops: OpsConsole;
  input: PassThrough;
  output: () => string[];
  /** Waits until an output line matches. */
  waitFor: (pattern: RegExp) => Promise<void>;
  /** Sends the lines, ends input, waits for the prompt loop to finish; returns all output lines. */
  script: (lines: string[]) => Promise<string[]>;
}

const consoles: OpsConsole[] = [];

afterEach(async () => {
  await Promise.all(consoles.splice(0).map((ops) => ops.close()));
});

function harness(
  options: {
    defaults?: ConsoleDefaults;
    providerStatus?: () => ProviderStatusView[];
    nodes?: string[];
    summaries?: NodeSummary[];
  } = {},
): Harness {
  const bus = new FakeEventBus();
  const service = FakeEdgeService.forConsole(bus);
  service.nodes =
    options.summaries ?? (options.nodes ?? []).map((id, index) => node(id, id, 1_700_000_000_000 + index));
  const input = new PassThrough();
  const sink = new PassThrough();
  let text = '';
  sink.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  const prompt = new ConsolePrompt({ input, output: sink, terminal: false });
  const ops = new OpsConsole({
    service,
    events: bus,
    write: prompt.writeLine,
    defaults: options.defaults ?? DEFAULTS,
    providerStatus: options.providerStatus,
  });
  consoles.push(ops);
  ops.start();
  const loop = prompt.run(ops);
  const output = (): string[] =>
    text.split('\n').filter((line, index, all) => index < all.length - 1 || line !== '');
  const waitFor = async (pattern: RegExp): Promise<void> => {
    const deadline = Date.now() + 2000;
    while (!output().some((line) => pattern.test(line))) {
      if (Date.now() > deadline)
        throw new Error(`no output line matched ${pattern}; got:\n${output().join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  return {
    service,
    bus,
    ops,
    input,
    output,
    waitFor,
    script: async (lines) => {
      for (const line of lines) input.write(`${line}\n`);
      input.end();
      await loop;
      return output();
    },
  };
}

function connect(h: Harness, nodeId: string, alias = nodeId): void {
  h.service.nodes.push(node(nodeId, alias, Date.now()));
  h.bus.publish({
    type: 'node',
    event: { kind: 'connected', nodeId, alias, reason: 'registered', atUnixMs: Date.now() },
  });
}

function disconnect(h: Harness, nodeId: string, reason: string): void {
  h.service.nodes = h.service.nodes.filter((candidate) => candidate.nodeId !== nodeId);
  h.bus.publish({
    type: 'node',
    event: { kind: 'disconnected', nodeId, alias: nodeId, reason, atUnixMs: Date.now() },
  });
}

function maskRunIds(lines: string[]): string[] {
  return lines.map((line) => line.replace(/run_id=manual-\S+/g, 'run_id=manual-...'));
}

function transcriptResponses(service: FakeEdgeService): void {
  service.commandResponses.set(
    'capabilities',
    create.nodeCommandResponse({
      ok: true,
      result: { targets: 'fake-cli', adapter: 'cli', max_concurrency: '4' },
    }),
  );
  service.commandResponses.set(
    'transport',
    create.nodeCommandResponse({
      ok: true,
      result: {
        target: 'fake-cli',
        state: 'connected',
        session_id: 'default',
        node_id: 'test-node',
        connected: 'true',
        adapter: 'cli',
      },
    }),
  );
  service.commandResponses.set(
    'sessions',
    create.nodeCommandResponse({
      ok: true,
      result: {
        sessions: '1',
        'session.0.mode': 'persistent',
        'session.0.target': 'fake-cli',
        'session.0.session': 'default',
      },
    }),
  );
}

describe('OpsConsole', () => {
  it('reproduces the README transcript line by line', async () => {
    const h = harness();
    transcriptResponses(h.service);
    connect(h, 'test-node');
    await h.waitFor(/connected/);
    const lines = await h.script([
      '/nodes',
      'Convert token iop_manual_one and reply only with converted token',
      'Convert token iop_manual_two and reply only with converted token',
      '/capabilities',
      '/transport',
      '/sessions',
      '/terminate-session',
    ]);
    expect(maskRunIds(lines)).toEqual(README_TRANSCRIPT_BEFORE_STATUS);
    expect(h.service.runs.map((run) => run.input.messages[0]?.content)).toEqual([
      'Convert token iop_manual_one and reply only with converted token',
      'Convert token iop_manual_two and reply only with converted token',
    ]);
    expect(h.service.runs[0]?.runId).toMatch(/^manual-/);
    expect(h.service.terminated).toEqual([
      { node: undefined, adapter: 'cli', target: 'fake-cli', sessionId: 'default' },
    ]);
    expect(h.service.commands.map((command) => command.request)).toEqual(
      ['capabilities', 'transport', 'sessions'].map((name) =>
        create.nodeCommandRequest({
          command: name,
          adapter: 'cli',
          target: 'fake-cli',
          sessionId: 'default',
        }),
      ),
    );
  });

  it('labels nodes by connection order, marks the selected node and keeps labels across reconnects', async () => {
    // Listed out of order: the console numbers already-connected nodes by connection time.
    const h = harness({
      summaries: [node('early-b', 'bee', 1_700_000_000_005), node('early-a', 'ay', 1_700_000_000_001)],
    });
    connect(h, 'late', 'latecomer');
    await h.waitFor(/connected node=late/);
    disconnect(h, 'early-a', 'heartbeat-timeout');
    await h.waitFor(/disconnected/);
    connect(h, 'early-a', 'ay');
    await h.waitFor(/node0-evt\] connected node=early-a/);
    const lines = await h.script(['/nodes', '/node latecomer', '/nodes', '/node missing']);
    expect(lines).toEqual([
      '[node2-evt] connected node=late reason=registered',
      '[node0-evt] disconnected node=early-a reason=heartbeat-timeout',
      '[node0-evt] connected node=early-a reason=registered',
      'edge> /nodes',
      'early-a (ay) [node0]',
      'early-b (bee) [node1]',
      'late (latecomer) [node2]',
      'edge> /node latecomer',
      'selected node late (latecomer)',
      'edge> /nodes',
      'early-a (ay) [node0]',
      'early-b (bee) [node1]',
      '* late (latecomer) [node2]',
      'edge> /node missing',
      'error: node missing is not connected',
    ]);
  });

  it('sends runs and commands to the selected node and session', async () => {
    const h = harness({ nodes: ['one', 'two'] });
    h.service.commandResponses.set(
      'capabilities',
      create.nodeCommandResponse({ ok: true, result: { adapter: 'cli' } }),
    );
    const lines = await h.script([
      'hello iop_x',
      '/node two',
      '/session work',
      'hello iop_y',
      '/capabilities',
      '/session',
    ]);
    expect(maskRunIds(lines)).toEqual([
      'edge> hello iop_x',
      'error: several nodes are connected; choose one with /node <id|alias>',
      'edge> /node two',
      'selected node two (two)',
      'edge> /session work',
      'session work',
      'edge> hello iop_y',
      '[edge] sent run_id=manual-... node=two adapter=cli target=fake-cli session=work background=false',
      '[node1-evt] start run_id=manual-...',
      '[node1-msg] IOP_Y_OK',
      '[node1-msg] IOP_Y_TAIL',
      '[node1-evt] complete run_id=manual-... detail="idle-timeout"',
      'edge> /capabilities',
      '[node1-capabilities] target=fake-cli session=work',
      '  adapter = cli',
      'edge> /session',
      'session work; usage: /session <id>',
    ]);
    expect(h.service.runs[0]?.input).toMatchObject({ node: 'two', sessionId: 'work', background: false });
    expect(h.service.commands[0]).toMatchObject({ node: 'two' });
  });

  it('uses the configured console node', async () => {
    const h = harness({ nodes: ['one', 'two'], defaults: { ...DEFAULTS, node: 'two' } });
    const lines = await h.script(['/nodes', 'go iop_z']);
    expect(maskRunIds(lines).slice(0, 4)).toEqual([
      'edge> /nodes',
      'one (one) [node0]',
      '* two (two) [node1]',
      'edge> go iop_z',
    ]);
    expect(h.service.runs[0]?.input.node).toBe('two');
  });

  it('returns at once in background mode and prints the events when they arrive', async () => {
    const h = harness({ nodes: ['test-node'] });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.service.script = (run) => {
      void gate.then(() => {
        run.emit({ type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' });
        run.emit({ type: 'text-delta', text: 'late answer' });
        run.emit({ type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 1 });
      });
    };
    h.input.write('/background on\n');
    h.input.write('work iop_bg\n');
    h.input.write('/background\n');
    await h.waitFor(/^background on$/);
    await h.waitFor(/background=true/);
    await h.waitFor(/^edge> \/background$/);
    expect(h.output().some((line) => line.includes('start run_id'))).toBe(false);
    release();
    await h.ops.backgroundSettled();
    const lines = await h.script(['/background off']);
    expect(maskRunIds(lines)).toEqual([
      'edge> /background on',
      'background on',
      'edge> work iop_bg',
      '[edge] sent run_id=manual-... node=test-node adapter=cli target=fake-cli session=default background=true',
      'edge> /background',
      'background on',
      '[node0-evt] start run_id=manual-...',
      '[node0-msg] late answer',
      '[node0-evt] complete run_id=manual-... detail="stop"',
      'edge> /background off',
      'background off',
    ]);
    expect(h.service.runs[0]?.input.background).toBe(true);
  });

  it('prints usage status, node errors and empty results explicitly', async () => {
    const h = harness({ nodes: ['test-node'] });
    h.service.usageResponse = create.nodeCommandResponse({
      ok: false,
      error: 'status check not supported for target fake-cli',
    });
    h.service.commandResponses.set('capabilities', create.nodeCommandResponse({ ok: true, result: {} }));
    h.service.commandResponses.set('transport', new ServiceError('node_error', 'adapter crashed'));
    h.service.commandResponses.set(
      'sessions',
      create.nodeCommandResponse({ ok: true, result: { 'b.key': '2', 'a.key': '1' } }),
    );
    let lines = await h.script(['/status', '/capabilities', '/transport', '/sessions']);
    expect(lines).toEqual([
      'edge> /status',
      'error: node reported error: status check not supported for target fake-cli',
      'edge> /capabilities',
      'node reported an empty result for capabilities',
      'edge> /transport',
      'error: node reported error: adapter crashed',
      'edge> /sessions',
      '[node0-sessions] target=fake-cli session=default',
      '  a.key = 1',
      '  b.key = 2',
    ]);

    const ok = harness({ nodes: ['test-node'] });
    ok.service.usageResponse = create.nodeCommandResponse({
      ok: true,
      result: { 'five_hour.used_percent': '12', 'five_hour.resets_at': '2026-01-01T00:00:00Z' },
    });
    lines = await ok.script(['/status']);
    expect(lines).toEqual([
      'edge> /status',
      '[node0-status] target=fake-cli session=default',
      '  five_hour.resets_at = 2026-01-01T00:00:00Z',
      '  five_hour.used_percent = 12',
    ]);
    expect(ok.service.usageCalls).toEqual([
      { node: 'test-node', adapter: 'cli', target: 'fake-cli', sessionId: 'default' },
    ]);
  });

  it('prints provider status from the injected source', async () => {
    const providers: ProviderStatusView[] = [
      {
        providerId: 'ollama-a',
        nodeId: 'test-node',
        status: 'ready',
        health: 'healthy',
        capacity: 2,
        inFlight: 1,
        queued: 0,
        servedModels: ['llama3.2', 'qwen3'],
      },
      {
        providerId: 'vllm-b',
        nodeId: 'gpu',
        status: 'disabled',
        health: 'disabled',
        capacity: 0,
        inFlight: 0,
        queued: 0,
        servedModels: [],
      },
      {
        providerId: 'ollama-b',
        nodeId: 'test-node',
        status: 'ready',
        health: 'healthy',
        capacity: 1,
        inFlight: 0,
        queued: 0,
        servedModels: ['llama3.2', 'qwen3'],
        residentModels: ['qwen3'],
        residentState: 'fresh',
      },
      {
        providerId: 'ollama-c',
        nodeId: 'test-node',
        status: 'ready',
        health: 'healthy',
        capacity: 1,
        inFlight: 0,
        queued: 0,
        servedModels: ['llama3.2'],
        residentModels: [],
        residentState: 'stale',
      },
    ];
    let lines = await harness({ providerStatus: () => providers }).script(['/providers']);
    expect(lines).toEqual([
      'edge> /providers',
      'ollama-a node=test-node status=ready health=healthy capacity=2 in_flight=1 queued=0 models=llama3.2,qwen3',
      'vllm-b node=gpu status=disabled health=disabled capacity=0 in_flight=0 queued=0 models=-',
      'ollama-b node=test-node status=ready health=healthy capacity=1 in_flight=0 queued=0 models=llama3.2,qwen3 resident=qwen3',
      'ollama-c node=test-node status=ready health=healthy capacity=1 in_flight=0 queued=0 models=llama3.2 resident=-(stale)',
    ]);
    lines = await harness({ providerStatus: () => [] }).script(['/providers']);
    expect(lines).toEqual(['edge> /providers', 'no providers configured']);
    // Without an injected source the console asks the service (every edge has a pool now).
    const fromService = harness();
    fromService.service.providerList = [
      {
        providerId: 'ollama-a',
        nodeId: 'test-node',
        status: 'ready',
        health: 'healthy',
        capacity: 2,
        inFlight: 1,
        queued: 0,
        servedModels: ['llama3.2', 'qwen3'],
        priority: 0,
      },
    ];
    // Agent runs follow, with their model calls (child runs) live / in all and the tokens so far.
    fromService.service.agentRunList = [
      {
        runId: 'run-agent',
        nodeId: 'test-node',
        principal: 'key-a',
        model: 'coder',
        liveChildren: 1,
        children: 3,
        tokens: 12,
        childTokens: 300,
      },
    ];
    lines = await fromService.script(['/providers']);
    expect(lines).toEqual([
      'edge> /providers',
      'ollama-a node=test-node status=ready health=healthy capacity=2 in_flight=1 queued=0 models=llama3.2,qwen3',
      'agent run-agent node=test-node key=key-a model=coder children=1/3 tokens=12 child_tokens=300',
    ]);
  });

  it('prints run errors, cancellations, tool calls and reasoning with the node label', async () => {
    const h = harness({ nodes: ['test-node'] });
    const scripts = [
      (emit: (part: Parameters<(typeof h.service.runs)[number]['emit']>[0]) => void) => {
        emit({ type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' });
        emit({ type: 'reasoning-delta', text: 'thinking…\n' });
        emit({ type: 'text-delta', text: 'partial' });
        emit({
          type: 'error',
          code: 'node_disconnected',
          message: 'node "test-node" went away',
          retryable: true,
          backendMs: 0,
        });
      },
      (emit: (part: Parameters<(typeof h.service.runs)[number]['emit']>[0]) => void) => {
        emit({
          type: 'tool-call',
          call: create.toolCall({ id: 'call_1', name: 'bash', argumentsJson: '{"cmd":"ls"}' }),
        });
        emit({ type: 'progress', kind: 'log', message: 'spawned worker', fields: {} });
        emit({ type: 'cancelled', reason: 'terminated' });
      },
    ];
    h.service.script = (run) => {
      const script = scripts.shift();
      setTimeout(() => script?.(run.emit), 1);
    };
    const lines = await h.script(['first', 'second', '/nope', '']);
    expect(maskRunIds(lines)).toEqual([
      'edge> first',
      '[edge] sent run_id=manual-... node=test-node adapter=cli target=fake-cli session=default background=false',
      '[node0-evt] start run_id=manual-...',
      '[node0-think] thinking…',
      '[node0-msg] partial',
      '[node0-evt] error run_id=manual-... code=node_disconnected message="node \\"test-node\\" went away"',
      'edge> second',
      '[edge] sent run_id=manual-... node=test-node adapter=cli target=fake-cli session=default background=false',
      '[node0-evt] tool-call run_id=manual-... id=call_1 name=bash arguments="{\\"cmd\\":\\"ls\\"}"',
      '[node0-evt] progress run_id=manual-... kind=log message="spawned worker"',
      '[node0-evt] cancelled run_id=manual-... reason="terminated"',
      'edge> /nope',
      'unknown command /nope; type /help for the list',
      'edge> ',
    ]);
  });

  it('interrupt cancels the foreground run and the console keeps working', async () => {
    const h = harness({ nodes: ['test-node'] });
    h.service.script = (run) =>
      run.emit({ type: 'start', sessionId: 'default', adapter: 'cli', target: 'fake-cli' });
    expect(h.ops.interrupt()).toBe(false);
    h.input.write('long task\n');
    await h.waitFor(/start run_id/);
    expect(h.ops.interrupt()).toBe(true);
    const lines = await h.script(['/background']);
    expect(maskRunIds(lines)).toEqual([
      'edge> long task',
      '[edge] sent run_id=manual-... node=test-node adapter=cli target=fake-cli session=default background=false',
      '[node0-evt] start run_id=manual-...',
      '[node0-evt] cancelled run_id=manual-... reason="interrupted by operator"',
      'edge> /background',
      'background off',
    ]);
    expect(h.service.runs[0]?.cancelReasons).toEqual(['interrupted by operator']);
  });

  it('reports a missing node and stops at /exit without reading further lines', async () => {
    const h = harness();
    const lines = await h.script(['hello', '/terminate-session', '/nodes', '/exit', '/nodes']);
    expect(lines).toEqual([
      'edge> hello',
      'error: no node is connected',
      'edge> /terminate-session',
      'error: no node is connected',
      'edge> /nodes',
      'no nodes connected',
      'edge> /exit',
    ]);
    expect(await h.ops.handleLine('/help')).toBe('continue');
  });

  it('/nodes shows each node with its label; a node connecting later gets the next label', async () => {
    const h = harness({ nodes: ['gpu-box', 'laptop'] });
    connect(h, 'third', 'tres');
    await h.waitFor(/connected node=third/);
    const lines = await h.script(['/nodes', '/node laptop', '/nodes']);
    expect(lines.slice(1)).toEqual([
      'edge> /nodes',
      'gpu-box (gpu-box) [node0]',
      'laptop (laptop) [node1]',
      'third (tres) [node2]',
      'edge> /node laptop',
      'selected node laptop (laptop)',
      'edge> /nodes',
      'gpu-box (gpu-box) [node0]',
      '* laptop (laptop) [node1]',
      'third (tres) [node2]',
    ]);
  });

  it('/adapter and /target switch a run to another profile of the same node, checked with its capabilities', async () => {
    const h = harness({ nodes: ['box'] });
    const targets: Record<string, string> = { cli: 'fake-cli', agents: 'claude,codex' };
    h.service.commandHandler = (input) => {
      if (input.request.command !== 'capabilities') return undefined;
      const list = targets[input.request.adapter];
      return list === undefined
        ? create.nodeCommandResponse({ ok: false, error: `unknown adapter '${input.request.adapter}'` })
        : create.nodeCommandResponse({ ok: true, result: { adapter: input.request.adapter, targets: list } });
    };
    const lines = await h.script([
      '/adapter nope',
      '/adapter agents',
      '/target gemini',
      '/target codex',
      'hello iop_p',
      '/target',
      '/adapter cli',
      '/target fake-cli',
      'hello iop_q',
    ]);
    expect(maskRunIds(lines)).toEqual([
      'edge> /adapter nope',
      "error: node reported error: unknown adapter 'nope'",
      'edge> /adapter agents',
      'adapter agents on box; target fake-cli is not one of its targets (claude, codex): choose one with /target',
      'edge[agents/fake-cli]> /target gemini',
      'error: adapter agents on box has no target gemini (targets: claude, codex)',
      'edge[agents/fake-cli]> /target codex',
      'adapter agents target codex on box',
      'edge[agents/codex]> hello iop_p',
      '[edge] sent run_id=manual-... node=box adapter=agents target=codex session=default background=false',
      '[node0-evt] start run_id=manual-...',
      '[node0-msg] IOP_P_OK',
      '[node0-msg] IOP_P_TAIL',
      '[node0-evt] complete run_id=manual-... detail="idle-timeout"',
      'edge[agents/codex]> /target',
      'adapter agents target codex; usage: /target <name>',
      'edge[agents/codex]> /adapter cli',
      'adapter cli on box; target codex is not one of its targets (fake-cli): choose one with /target',
      'edge[cli/codex]> /target fake-cli',
      'adapter cli target fake-cli on box',
      'edge> hello iop_q',
      '[edge] sent run_id=manual-... node=box adapter=cli target=fake-cli session=default background=false',
      '[node0-evt] start run_id=manual-...',
      '[node0-msg] IOP_Q_OK',
      '[node0-msg] IOP_Q_TAIL',
      '[node0-evt] complete run_id=manual-... detail="idle-timeout"',
    ]);
    expect(h.service.runs.map((run) => [run.input.adapter, run.input.target])).toEqual([
      ['agents', 'codex'],
      ['cli', 'fake-cli'],
    ]);
    expect(h.service.commands.map((command) => command.request.adapter)).toEqual([
      'nope',
      'agents',
      'agents',
      'agents',
      'cli',
      'cli',
    ]);
  });

  it('lists every command in /help', async () => {
    const lines = await harness().script(['/help']);
    for (const command of ['/adapter', '/target']) {
      expect(lines.some((line) => line.startsWith(command))).toBe(true);
    }
    for (const command of ['/nodes', '/node', '/session', '/background', '/terminate-session', '/status']) {
      expect(lines.some((line) => line.startsWith(command))).toBe(true);
    }
    for (const command of ['/capabilities', '/sessions', '/transport', '/providers', '/exit', '/help']) {
      expect(lines.some((line) => line.startsWith(command))).toBe(true);
    }
  });

  it('warns when its event subscription dropped events', async () => {
    const bus = new FakeEventBus();
    const lines: string[] = [];
    let dropped = 0;
    // A bus whose subscription reports overflow losses, as the real bus does for a slow subscriber.
    const lossy: EventBus = {
      publish: (event) => bus.publish(event),
      subscribe: () => {
        const inner = bus.subscribe();
        return {
          get dropped() {
            return dropped;
          },
          close: () => inner.close(),
          [Symbol.asyncIterator]: () => inner[Symbol.asyncIterator](),
        };
      },
    };
    const ops = new OpsConsole({
      service: FakeEdgeService.forConsole(),
      events: lossy,
      write: (line) => lines.push(line),
      defaults: DEFAULTS,
    });
    consoles.push(ops);
    ops.start();
    dropped = 3;
    bus.publish({
      type: 'node',
      event: { kind: 'connected', nodeId: 'n', alias: 'n', reason: 'registered', atUnixMs: 1 },
    });
    const deadline = Date.now() + 2000;
    while (lines.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(lines).toEqual([
      '[edge] warning: the console fell behind and missed 3 events',
      '[node0-evt] connected node=n reason=registered',
    ]);
  });

  it('stops printing node events after close and releases its subscription', async () => {
    const h = harness();
    await h.script([]);
    expect(h.bus.subscriptions.size).toBe(1);
    await h.ops.close();
    expect(h.bus.subscriptions.size).toBe(0);
    connect(h, 'after');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(h.output()).toEqual([]);
    expect(await h.ops.handleLine('/nodes')).toBe('exit');
  });
});
