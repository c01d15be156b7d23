// A scriptable EdgeService for surface tests: runs play scripted parts with delays, honour cancel and the
// caller's AbortSignal, and record what they were asked.
import type { NodeCommandResponse, RunEventPart } from '@iop/wire';
import { create } from '@iop/wire';
import { ServiceError } from '../service/errors.js';
import type {
  EdgeService,
  NodeCommandInput,
  NodeSummary,
  RunEventWithMeta,
  RunHandle,
  RunOutcome,
  SessionRef,
  SubmitRunInput,
} from '../service/types.js';

export interface FakeRunScript {
  /** Parts after `start`; end with a terminal part, or set `hang` to wait for a cancel. */
  parts: RunEventPart[];
  delayMs?: number;
  hang?: boolean;
}

export interface FakeEdgeServiceOptions {
  script?: (input: SubmitRunInput) => FakeRunScript;
  nodes?: NodeSummary[];
}

export function fakeNode(nodeId: string, alias = nodeId): NodeSummary {
  return {
    nodeId,
    alias,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    hostname: 'host',
    remoteAddress: '127.0.0.1:1',
    connectedSinceUnixMs: 0,
    lastHeartbeatUnixMs: 0,
    adapters: ['cli'],
    providers: [],
  };
}

export class FakeEdgeService implements EdgeService {
  readonly submitted: SubmitRunInput[] = [];
  readonly cancelled: string[] = [];
  readonly terminated: SessionRef[] = [];
  private readonly active = new Map<string, { cancel: (reason: string) => void }>();
  private counter = 0;
  script: (input: SubmitRunInput) => FakeRunScript;
  nodes: NodeSummary[];

  constructor(options: FakeEdgeServiceOptions = {}) {
    this.script =
      options.script ??
      ((input) => ({
        parts: [
          { type: 'text-delta', text: `echo: ${input.messages.at(-1)?.content ?? ''}` },
          { type: 'complete', detail: 'stop', finishReason: 'stop', backendMs: 0 },
        ],
      }));
    this.nodes = options.nodes ?? [fakeNode('node-a')];
  }

  get inFlight(): number {
    return this.active.size;
  }

  submitRun(input: SubmitRunInput): Promise<RunHandle> {
    const node = this.resolveNode(input.node);
    this.submitted.push(input);
    this.counter += 1;
    const runId = input.runId ?? `run-${this.counter.toString()}`;
    const script = this.script(input);
    const queue: RunEventWithMeta[] = [];
    let wake: (() => void) | undefined;
    let finished = false;
    let seq = 0;
    let resolveDone: (outcome: RunOutcome) => void = () => undefined;
    const done = new Promise<RunOutcome>((resolve) => {
      resolveDone = resolve;
    });
    const push = (part: RunEventPart): void => {
      if (finished) return;
      seq += 1;
      queue.push({ runId, nodeId: node.nodeId, seq, atUnixMs: Date.now(), part });
      if (part.type === 'complete') {
        finish({ status: 'completed', detail: part.detail, finishReason: part.finishReason });
      } else if (part.type === 'error') {
        finish({ status: 'error', code: part.code, message: part.message });
      } else if (part.type === 'cancelled') {
        finish({ status: 'cancelled', reason: part.reason });
      }
      wake?.();
    };
    const finish = (outcome: RunOutcome): void => {
      finished = true;
      this.active.delete(runId);
      resolveDone(outcome);
    };
    const cancel = (reason: string): void => {
      if (finished) return;
      this.cancelled.push(runId);
      push({ type: 'cancelled', reason });
    };
    this.active.set(runId, { cancel });
    input.signal?.addEventListener('abort', () => cancel('client aborted'), { once: true });
    push({ type: 'start', sessionId: input.sessionId, adapter: input.adapter, target: input.target });
    void (async () => {
      for (const part of script.parts) {
        if (script.delayMs) await sleep(script.delayMs);
        push(part);
      }
    })();
    async function* events(): AsyncGenerator<RunEventWithMeta> {
      for (;;) {
        const next = queue.shift();
        if (next) {
          yield next;
          if (next.part.type === 'complete' || next.part.type === 'error' || next.part.type === 'cancelled')
            return;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    }
    const started = Date.now();
    return Promise.resolve({
      runId,
      nodeId: node.nodeId,
      events: events(),
      done,
      cancel: (reason?: string) => {
        cancel(reason ?? 'cancelled');
        return Promise.resolve();
      },
      overheadMs: () => (finished ? Math.max(0, Date.now() - started) : undefined),
    });
  }

  cancelRun(runId: string, reason?: string): Promise<boolean> {
    const run = this.active.get(runId);
    run?.cancel(reason ?? 'cancelled');
    return Promise.resolve(run !== undefined);
  }

  terminateSession(ref: SessionRef): Promise<string> {
    this.terminated.push(ref);
    return Promise.resolve(this.resolveNode(ref.node).nodeId);
  }

  nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse> {
    this.resolveNode(input.node);
    return Promise.resolve(
      create.nodeCommandResponse({ ok: true, result: { command: input.request.command } }),
    );
  }

  usageStatus(ref: SessionRef): Promise<NodeCommandResponse> {
    return this.nodeCommand({ node: ref.node, request: create.nodeCommandRequest({ command: 'status' }) });
  }

  listNodes(): NodeSummary[] {
    return this.nodes;
  }

  resolveNode(ref?: string): NodeSummary {
    if (ref) {
      const node = this.nodes.find((candidate) => candidate.nodeId === ref || candidate.alias === ref);
      if (!node) throw new ServiceError('node_not_found', `node ${ref} is not connected`);
      return node;
    }
    if (this.nodes.length === 0) throw new ServiceError('no_nodes', 'no node is connected');
    if (this.nodes.length > 1)
      throw new ServiceError('node_ambiguous', 'several nodes are connected; choose one');
    return this.nodes[0];
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
