// OpsConsole, the interactive ops console: a diagnostic surface over EdgeService and the EventBus (the README's
// `edge>` prompt). Not a "session": its `/session` names the logical session its runs use. It takes one input line
// at a time and writes output lines through an injected writer, so it runs the same in a terminal, over piped stdin
// and in-process tests.
//
// Lifecycle: construct, `start()` (subscribes to node lifecycle events), feed lines with `handleLine()` one at a
// time (a foreground run is awaited before the next line), `close()` once.
//
// Node labels: every event and message line carries `node<i>`, where i is the node's index in the order this
// console saw nodes connect (first connected = node0; nodes already connected at start are numbered first, by
// connection time). Labels are stable for the console's lifetime, also across reconnects; see present/node-labels.ts.
//
// `/nodes` lists `id (alias) [node<i>]`, the selected node marked `* `.
//
// Runs: a plain text line is a prompt sent as a run to the console's adapter/target/session (config `console`,
// changed with /node, /session, /adapter and /target; /adapter and /target are checked against the selected
// node's `capabilities` first, so e.g. another CLI profile of the same node can be tried without a restart, and
// the prompt reads `edge[<adapter>/<target>]> ` while they differ from the configured ones). In the foreground the run's events print as they arrive and the console waits
// for its terminal event; with `/background on` the console prints `[edge] sent ...` and returns at once, and the
// run's events still print when they arrive.
import { systemClock } from '../clock.js';
import { create, type NodeCommandResponse } from '@iop/wire';
import type { EventBus, EventSubscription } from '../events/types.js';
import type { Logger } from '../logging.js';
import { silentLogger } from '../logging.js';
import { discoverySummary } from '../present/node-discovered.js';
import type { EdgeService, NodeSummary, RunHandle, SessionRef } from '../service/types.js';
import { describeConsoleError, nodeReportedError } from './console-errors.js';
import {
  formatAgentRunLine,
  formatProviderLine,
  formatResultMap,
  formatRunPart,
  formatSessions,
  type ProviderStatusView,
  type RunTextState,
} from './console-format.js';
import { NodeLabels } from '../present/node-labels.js';
import { terminalText } from '../present/terminal-text.js';
import { TextLineAssembler } from './text-line-assembler.js';

export interface ConsoleDefaults {
  /** Node id or alias to send to; '' or undefined = let the service pick the only connected node. */
  node?: string;
  adapter: string;
  target: string;
  sessionId: string;
}

export interface OpsConsoleOptions {
  service: EdgeService;
  events: EventBus;
  /** Receives every output line, without a line ending. */
  write: (line: string) => void;
  defaults: ConsoleDefaults;
  /** Source of `/providers`; default: the service's provider status (every surface's runs counted). */
  providerStatus?: () => ProviderStatusView[];
  logger?: Logger;
  /** Run ids for prompts; default `manual-<time>-<n>`. */
  newRunId?: () => string;
}

export type ConsoleLineResult = 'continue' | 'exit';

/** The console prompt with the configured adapter/target (the seed transcript's `edge> `). */
export const DEFAULT_PROMPT = 'edge> ';

type CommandName =
  | 'nodes'
  | 'node'
  | 'adapter'
  | 'target'
  | 'session'
  | 'background'
  | 'terminate-session'
  | 'status'
  | 'capabilities'
  | 'sessions'
  | 'transport'
  | 'providers'
  | 'discover'
  | 'exit'
  | 'help';

const HELP: ReadonlyArray<[string, string]> = [
  ['/nodes', 'list connected nodes (the selected node is marked *)'],
  ['/node <id|alias>', 'send to this node from now on'],
  ['/adapter <name>', 'use this adapter instance of the selected node (checked with its capabilities)'],
  ['/target <name>', 'use this target (CLI profile or model) of the adapter (checked with its capabilities)'],
  ['/session <id>', 'use this logical session from now on'],
  ['/background on|off', 'on: print "sent" and return at once; events print as they arrive'],
  ['/terminate-session', 'stop the worker process of the current adapter/target/session'],
  ['/status', 'usage status of the current target'],
  ['/capabilities', 'capabilities of the current adapter'],
  ['/sessions', 'logical sessions of the current adapter'],
  ['/transport', 'transport/runtime state of the selected node'],
  ['/providers', 'provider pool status'],
  ['/discover', 're-run discovery on the selected node and print what it found'],
  ['/exit', 'leave the console'],
  ['/help', 'this list'],
  ['<text>', 'send the text as a prompt to the current target'],
];

const COMMANDS: ReadonlySet<string> = new Set<CommandName>([
  'nodes',
  'node',
  'adapter',
  'target',
  'session',
  'background',
  'terminate-session',
  'status',
  'capabilities',
  'sessions',
  'transport',
  'providers',
  'discover',
  'exit',
  'help',
]);

export class OpsConsole {
  private readonly service: EdgeService;
  private readonly events: EventBus;
  private readonly write: (line: string) => void;
  private readonly providerStatus: () => ProviderStatusView[];
  private readonly logger: Logger;
  private readonly newRunId: () => string;
  private readonly labels = new NodeLabels();
  private readonly defaults: ConsoleDefaults;
  private adapter: string;
  private target: string;
  private selectedNode: string | undefined;
  private sessionId: string;
  private background = false;
  private subscription: EventSubscription | undefined;
  private watcher: Promise<void> | undefined;
  private foreground: RunHandle | undefined;
  private readonly backgroundRuns = new Set<Promise<void>>();
  private runCounter = 0;
  private closed = false;

  constructor(options: OpsConsoleOptions) {
    this.service = options.service;
    this.events = options.events;
    // Node ids, discovery strings and run text come from nodes: no escape sequence of theirs reaches the terminal.
    const write = options.write;
    this.write = (line) => write(terminalText(line, { tabs: true }));
    this.providerStatus = options.providerStatus ?? (() => this.service.providers());
    this.logger = options.logger ?? silentLogger;
    this.defaults = options.defaults;
    this.adapter = options.defaults.adapter;
    this.target = options.defaults.target;
    this.sessionId = options.defaults.sessionId;
    this.selectedNode = options.defaults.node ? options.defaults.node : undefined;
    this.newRunId =
      options.newRunId ?? (() => `manual-${systemClock.now().toString(36)}-${++this.runCounter}`);
  }

  /** Subscribes to node lifecycle events and numbers the nodes already connected. */
  start(): void {
    if (this.subscription) throw new Error('console session already started');
    // Subscribe before listing, so a node connecting in between is not missed (a duplicate label lookup is
    // harmless: labels are idempotent).
    this.subscription = this.events.subscribe();
    const connected = [...this.service.listNodes()].sort(
      (a, b) => a.connectedSinceUnixMs - b.connectedSinceUnixMs,
    );
    for (const node of connected) this.labels.labelFor(node.nodeId);
    this.watcher = this.watchNodeEvents(this.subscription);
  }

  /** The prompt word: `edge`, or `edge[<adapter>/<target>]` while /adapter or /target changed them. */
  promptText(): string {
    const changed = this.adapter !== this.defaults.adapter || this.target !== this.defaults.target;
    return changed ? `edge[${this.adapter}/${this.target}]> ` : DEFAULT_PROMPT;
  }

  /** Handles one input line. Resolves after the line's output is written (for a foreground run: after it ends). */
  async handleLine(rawLine: string): Promise<ConsoleLineResult> {
    if (this.closed) return 'exit';
    const line = rawLine.trim();
    if (line.length === 0) return 'continue';
    try {
      if (line.startsWith('/')) return await this.runCommand(line);
      await this.sendPrompt(line);
    } catch (error) {
      this.write(describeConsoleError(error));
    }
    return 'continue';
  }

  /** Cancels the foreground run, if any (Ctrl-C). Returns whether there was one. */
  interrupt(): boolean {
    const run = this.foreground;
    if (!run) return false;
    run.cancel('interrupted by operator').catch((error: unknown) => {
      this.write(describeConsoleError(error));
    });
    return true;
  }

  /** Resolves when every background run started so far has printed its terminal event. */
  async backgroundSettled(): Promise<void> {
    while (this.backgroundRuns.size > 0) await Promise.all([...this.backgroundRuns]);
  }

  /** Stops printing and releases the event subscription. Runs keep going on their nodes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.subscription?.close();
    await this.watcher;
  }

  private async runCommand(line: string): Promise<ConsoleLineResult> {
    const [word = '', ...args] = line.slice(1).split(/\s+/);
    if (!COMMANDS.has(word)) {
      this.write(`unknown command /${word}; type /help for the list`);
      return 'continue';
    }
    const name = word as CommandName;
    switch (name) {
      case 'nodes':
        this.listNodes();
        return 'continue';
      case 'node':
        this.selectNode(args[0]);
        return 'continue';
      case 'adapter':
        await this.selectAdapter(args[0]);
        return 'continue';
      case 'target':
        await this.selectTarget(args[0]);
        return 'continue';
      case 'session':
        this.selectSession(args[0]);
        return 'continue';
      case 'background':
        this.setBackground(args[0]);
        return 'continue';
      case 'terminate-session': {
        const nodeId = await this.service.terminateSession(this.sessionRef());
        this.write(`terminated session ${this.sessionId} node=${nodeId}`);
        return 'continue';
      }
      case 'status': {
        const node = this.service.resolveNode(this.selectedNode);
        const response = await this.service.usageStatus({ ...this.sessionRef(), node: node.nodeId });
        this.printCommandResult('status', node, response, formatResultMap);
        return 'continue';
      }
      case 'capabilities':
      case 'sessions':
      case 'transport': {
        const node = this.service.resolveNode(this.selectedNode);
        const response = await this.service.nodeCommand({
          node: node.nodeId,
          request: create.nodeCommandRequest({
            command: name,
            adapter: this.adapter,
            target: this.target,
            sessionId: this.sessionId,
          }),
        });
        this.printCommandResult(name, node, response, name === 'sessions' ? formatSessions : formatResultMap);
        return 'continue';
      }
      case 'providers':
        this.listProviders();
        return 'continue';
      case 'discover':
        await this.discover();
        return 'continue';
      case 'exit':
        return 'exit';
      case 'help':
        for (const [usage, summary] of HELP) this.write(`${usage.padEnd(20)} ${summary}`);
        return 'continue';
      default: {
        const unreachable: never = name;
        throw new Error(`unhandled console command ${String(unreachable)}`);
      }
    }
  }

  private listNodes(): void {
    const nodes = this.service.listNodes();
    if (nodes.length === 0) {
      this.write('no nodes connected');
      return;
    }
    const ordered = [...nodes].sort((a, b) => this.order(a) - this.order(b));
    for (const node of ordered) {
      const selected = this.selectedNode === node.nodeId || this.selectedNode === node.alias;
      const label = this.labels.labelFor(node.nodeId);
      this.write(`${selected ? '* ' : ''}${node.nodeId} (${node.alias || node.nodeId}) [${label}]`);
    }
  }

  private order(node: NodeSummary): number {
    this.labels.labelFor(node.nodeId);
    return this.labels.indexOf(node.nodeId) ?? 0;
  }

  private selectNode(reference: string | undefined): void {
    if (!reference) {
      this.write(
        this.selectedNode
          ? `selected node ${this.selectedNode}`
          : 'no node selected; usage: /node <id|alias>',
      );
      return;
    }
    const node = this.service.resolveNode(reference);
    this.selectedNode = node.nodeId;
    this.write(`selected node ${node.nodeId} (${node.alias || node.nodeId})`);
  }

  /** Switches the adapter after the selected node confirmed it (capabilities); says if the target does not fit. */
  private async selectAdapter(name: string | undefined): Promise<void> {
    if (!name) {
      this.write(`adapter ${this.adapter} target ${this.target}; usage: /adapter <name>`);
      return;
    }
    const checked = await this.capabilitiesOf(name);
    if (!checked) return;
    this.adapter = name;
    const { node, targets } = checked;
    if (targets.length > 0 && !targets.includes(this.target)) {
      this.write(
        `adapter ${name} on ${node.nodeId}; target ${this.target} is not one of its targets (${targets.join(', ')}): choose one with /target`,
      );
      return;
    }
    this.write(`adapter ${name} target ${this.target} on ${node.nodeId}`);
  }

  /** Switches the target when the adapter lists it (an adapter that lists no targets cannot be checked). */
  private async selectTarget(name: string | undefined): Promise<void> {
    if (!name) {
      this.write(`adapter ${this.adapter} target ${this.target}; usage: /target <name>`);
      return;
    }
    const checked = await this.capabilitiesOf(this.adapter);
    if (!checked) return;
    const { node, targets } = checked;
    if (targets.length > 0 && !targets.includes(name)) {
      this.write(
        `error: adapter ${this.adapter} on ${node.nodeId} has no target ${name} (targets: ${targets.join(', ')})`,
      );
      return;
    }
    this.target = name;
    const note = targets.length === 0 ? ' (the adapter lists no targets: not checked)' : '';
    this.write(`adapter ${this.adapter} target ${name} on ${node.nodeId}${note}`);
  }

  /** The selected node's capabilities of `adapter`; writes the error and answers undefined when it has none. */
  private async capabilitiesOf(
    adapter: string,
  ): Promise<{ node: NodeSummary; targets: string[] } | undefined> {
    const node = this.service.resolveNode(this.selectedNode);
    const response = await this.service.nodeCommand({
      node: node.nodeId,
      request: create.nodeCommandRequest({
        command: 'capabilities',
        adapter,
        target: '',
        sessionId: this.sessionId,
      }),
    });
    if (!response.ok) {
      this.write(nodeReportedError(response.error));
      return undefined;
    }
    const targets = (response.result['targets'] ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0);
    return { node, targets };
  }

  private selectSession(sessionId: string | undefined): void {
    if (!sessionId) {
      this.write(`session ${this.sessionId}; usage: /session <id>`);
      return;
    }
    this.sessionId = sessionId;
    this.write(`session ${sessionId}`);
  }

  private setBackground(mode: string | undefined): void {
    if (mode === 'on' || mode === 'off') this.background = mode === 'on';
    else if (mode !== undefined) {
      this.write('usage: /background on|off');
      return;
    }
    this.write(`background ${this.background ? 'on' : 'off'}`);
  }

  private listProviders(): void {
    const providers = this.providerStatus();
    if (providers.length === 0) {
      this.write('no providers configured');
      return;
    }
    for (const provider of providers) this.write(formatProviderLine(provider));
    for (const run of this.service.agentRuns()) this.write(formatAgentRunLine(run));
  }

  /** Asks the node for a fresh discovery pass; its report reaches the edge before the command's answer. */
  private async discover(): Promise<void> {
    const node = this.service.resolveNode(this.selectedNode);
    const response = await this.service.nodeCommand({
      node: node.nodeId,
      request: create.nodeCommandRequest({ command: 'discover' }),
    });
    if (!response.ok) {
      this.write(nodeReportedError(response.error));
      return;
    }
    this.write(`[${this.labels.labelFor(node.nodeId)}-discover] ${this.discoveryLine(node.nodeId)}`);
  }

  private discoveryLine(nodeId: string): string {
    const summary = this.service.listNodes().find((candidate) => candidate.nodeId === nodeId);
    return discoverySummary(summary?.discovered);
  }

  private printCommandResult(
    name: string,
    node: NodeSummary,
    response: NodeCommandResponse,
    format: (result: Record<string, string>) => string[],
  ): void {
    if (!response.ok) {
      this.write(nodeReportedError(response.error));
      return;
    }
    if (Object.keys(response.result).length === 0) {
      this.write(`node reported an empty result for ${name}`);
      return;
    }
    this.write(
      `[${this.labels.labelFor(node.nodeId)}-${name}] target=${this.target} session=${this.sessionId}`,
    );
    for (const line of format(response.result)) this.write(line);
  }

  private async sendPrompt(text: string): Promise<void> {
    const background = this.background;
    const handle = await this.service.submitRun(
      {
        kind: 'route',
        ...(this.selectedNode !== undefined ? { node: this.selectedNode } : {}),
        adapter: this.adapter,
        target: this.target,
      },
      {
        session: { kind: 'fixed', sessionId: this.sessionId },
        background,
        runId: this.newRunId(),
        messages: [create.chatMessage({ role: 'user', content: text })],
      },
      { surface: 'console' },
    );
    this.write(
      `[edge] sent run_id=${handle.runId} node=${handle.nodeId} adapter=${this.adapter} target=${this.target} ` +
        `session=${this.sessionId} background=${background}`,
    );
    if (background) {
      const printer = this.printRun(handle).finally(() => this.backgroundRuns.delete(printer));
      this.backgroundRuns.add(printer);
      return;
    }
    this.foreground = handle;
    try {
      await this.printRun(handle);
    } finally {
      this.foreground = undefined;
    }
  }

  /** Prints a run's events until its terminal event (or until the console closes). */
  private async printRun(handle: RunHandle): Promise<void> {
    const state: RunTextState = { text: new TextLineAssembler(), reasoning: new TextLineAssembler() };
    try {
      for await (const event of handle.events) {
        if (this.closed) return;
        const label = this.labels.labelFor(event.nodeId);
        for (const line of formatRunPart(label, event.runId, event.part, state)) this.write(line);
      }
    } catch (error) {
      if (!this.closed) this.write(describeConsoleError(error));
    }
  }

  private async watchNodeEvents(subscription: EventSubscription): Promise<void> {
    let reported = 0;
    try {
      for await (const event of subscription) {
        if (this.closed) return;
        // The bus drops the oldest events of a subscriber that falls behind; say so, since node lines may be lost.
        if (subscription.dropped > reported) {
          this.write(
            `[edge] warning: the console fell behind and missed ${subscription.dropped - reported} events`,
          );
          reported = subscription.dropped;
        }
        if (event.type !== 'node') continue;
        const node = event.event;
        const label = this.labels.labelFor(node.nodeId);
        if (node.kind === 'discovered') {
          this.write(`[${label}-evt] discovered node=${node.nodeId} ${this.discoveryLine(node.nodeId)}`);
          continue;
        }
        this.write(`[${label}-evt] ${node.kind} node=${node.nodeId} reason=${node.reason}`);
      }
    } catch (error) {
      this.logger.warn(
        { error: error instanceof Error ? error.message : String(error) },
        'console event watch ended',
      );
    }
  }

  private sessionRef(): SessionRef {
    return { node: this.selectedNode, adapter: this.adapter, target: this.target, sessionId: this.sessionId };
  }
}
