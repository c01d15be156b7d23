// Test support: a node behind a real NodeLink on a FakeChannel that answers run requests from a script, so tests
// drive the real service (run supervisor, placement, pool) end to end without a socket. A run plays its script's
// parts with a delay before each; a script without a terminal part waits for a cancel, which ends the run with a
// `cancelled` part (unless `ignoreCancels`). It counts what tests assert on: requests, cancels, peak concurrency.
import { CancelAction, isTerminalPart, toWireRunEvent, type RunEventPart, type RunRequest } from '@iop/wire';
import { silentLogger } from '../logging.js';
import { defaultNodePayload } from '../node/mapper.js';
import { NodeLink } from '../node/node-link.js';
import { FakeChannel, linkInfo } from '../node/test-support/fake-channel.js';

export interface NodeScriptParts {
  /** Parts in order; without a terminal part the run waits for a cancel. */
  parts: RunEventPart[];
  /** Delay before each part (default 0: the next turn of the event loop). */
  delayMs?: number;
}

export type NodeScript = (request: RunRequest) => NodeScriptParts;

export class ScriptedNode {
  readonly channel = new FakeChannel();
  readonly link: NodeLink;
  readonly requests: RunRequest[] = [];
  readonly cancelled: string[] = [];
  /** Runs started and not ended, by provider id ('' = none). */
  readonly inFlight = new Map<string, number>();
  readonly peak = new Map<string, number>();
  /** When true, cancels are recorded but never confirmed (a node that stopped answering). */
  ignoreCancels = false;
  private readonly running = new Map<string, { seq: number; providerId: string; timer?: NodeJS.Timeout }>();

  constructor(
    readonly nodeId: string,
    private readonly script: NodeScript,
  ) {
    this.link = new NodeLink({
      channel: this.channel,
      info: linkInfo(nodeId),
      payload: defaultNodePayload(nodeId),
      logger: silentLogger,
    });
    this.channel.onSend((envelope) => {
      const msg = envelope.msg;
      if (msg?.$case === 'runRequest') this.start(msg.runRequest);
      else if (
        msg?.$case === 'cancelRequest' &&
        msg.cancelRequest.action === CancelAction.CANCEL_ACTION_CANCEL_RUN
      ) {
        this.cancelled.push(msg.cancelRequest.runId);
        if (!this.ignoreCancels)
          this.emit(msg.cancelRequest.runId, { type: 'cancelled', reason: msg.cancelRequest.reason });
      }
    });
  }

  /** Runs that have not ended. */
  get open(): number {
    return this.running.size;
  }

  /** Sends a part of a running run (ignored once it ended). */
  emit(runId: string, part: RunEventPart): void {
    const run = this.running.get(runId);
    if (!run) return;
    run.seq += 1;
    if (isTerminalPart(part)) {
      if (run.timer) clearTimeout(run.timer);
      this.running.delete(runId);
      this.inFlight.set(run.providerId, (this.inFlight.get(run.providerId) ?? 1) - 1);
    }
    this.link.handle({
      requestId: '',
      msg: { $case: 'runEvent', runEvent: toWireRunEvent(runId, run.seq, part) },
    });
  }

  /** Ends every running run's timers (test cleanup). */
  stop(): void {
    for (const run of this.running.values()) if (run.timer) clearTimeout(run.timer);
    this.running.clear();
  }

  private start(request: RunRequest): void {
    this.requests.push(request);
    const providerId = request.providerId;
    const count = (this.inFlight.get(providerId) ?? 0) + 1;
    this.inFlight.set(providerId, count);
    this.peak.set(providerId, Math.max(this.peak.get(providerId) ?? 0, count));
    const run: { seq: number; providerId: string; timer?: NodeJS.Timeout } = { seq: 0, providerId };
    this.running.set(request.runId, run);
    const { parts, delayMs = 0 } = this.script(request);
    let index = 0;
    const next = (): void => {
      const part = parts[index++];
      if (!part || !this.running.has(request.runId)) return;
      this.emit(request.runId, part);
      if (this.running.has(request.runId) && index < parts.length) run.timer = setTimeout(next, delayMs);
    };
    run.timer = setTimeout(next, delayMs);
  }
}
