// An Outbound that records what would go to the edge, with helpers to read run events back as parts.
import { fromWireRunEvent, type Envelope, type RunEventEnvelope } from '@iop/wire';
import type { Outbound } from '../../link/outbound.js';

export class RecordingOutbound implements Outbound {
  readonly sent: Envelope[] = [];
  connected = true;

  send(message: Envelope): Promise<boolean> {
    if (!this.connected) return Promise.resolve(false);
    this.sent.push(message);
    return Promise.resolve(true);
  }

  runEvents(runId?: string): RunEventEnvelope[] {
    const events: RunEventEnvelope[] = [];
    for (const message of this.sent) {
      if (message.msg?.$case !== 'runEvent') continue;
      const event = fromWireRunEvent(message.msg.runEvent);
      if (event && (runId === undefined || event.runId === runId)) events.push(event);
    }
    return events;
  }

  /** Waits (bounded) until the run's terminal event was sent. */
  async waitForTerminal(runId: string, timeoutMs = 2000): Promise<RunEventEnvelope> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const terminal = this.runEvents(runId).find((event) =>
        ['complete', 'error', 'cancelled'].includes(event.part.type),
      );
      if (terminal) return terminal;
      if (Date.now() > deadline) throw new Error(`no terminal event for ${runId}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Waits (bounded) until the run has sent at least `count` events. */
  async waitForEvents(runId: string, count: number, timeoutMs = 2000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.runEvents(runId).length < count) {
      if (Date.now() > deadline) throw new Error(`run ${runId} sent fewer than ${count} events`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}
