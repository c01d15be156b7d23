import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../clock.js';
import { silentLogger } from '../logging.js';
import type { RunDestination, RunHandle, RunSpec, SubmitOptions } from '../service/types.js';
import { FakeEdgeService } from '../test-support/fake-edge-service.js';
import { TaskManager } from './task-manager.js';
import { TEST_A2A_SETTINGS } from './test-support/a2a-settings.js';

/**
 * A service whose runs confirm a cancel only when the test says so (the run supervisor's part: it ends the run
 * when the node confirms, or itself after its cancel grace).
 */
class ConfirmedCancelService extends FakeEdgeService {
  readonly asked: string[] = [];
  confirm: () => void = () => undefined;
  private readonly confirmed = new Promise<void>((resolve) => {
    this.confirm = resolve;
  });

  override async submitRun(
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
  ): Promise<RunHandle> {
    const handle = await super.submitRun(destination, spec, options);
    return {
      ...handle,
      cancel: (reason?: string) => {
        this.asked.push(reason ?? '');
        void this.confirmed.then(() => handle.cancel(reason));
        return Promise.resolve();
      },
    };
  }
}

const message = {
  kind: 'message',
  messageId: 'm1',
  role: 'user',
  parts: [{ kind: 'text', text: 'hold' }],
};

describe('TaskManager cancel', () => {
  it("asks the service to cancel, then finishes the task with the run's end (no wait of its own)", async () => {
    // Without a terminal part the fake's run lasts until it is cancelled.
    const service = new ConfirmedCancelService(() => ({ parts: [] }));
    let ids = 0;
    const tasks = new TaskManager(TEST_A2A_SETTINGS, {
      service,
      logger: silentLogger,
      clock: systemClock,
      newId: () => `id-${(ids += 1)}`,
    });
    const task = await tasks.send({ message }, { blocking: false });
    let settled = false;
    const canceling = tasks.cancel(task.id).finally(() => (settled = true));
    while (service.asked.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(service.asked).toEqual(['canceled by A2A client']);
    // Asked, not ended: the task stays working and the cancel waits for the run.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    expect((await tasks.get(task.id)).status.state).toBe('working');
    service.confirm();
    const canceled = await canceling;
    expect(canceled.status.state).toBe('canceled');
    expect(canceled.status.message?.parts).toEqual([
      { kind: 'text', text: 'Task canceled: canceled by A2A client' },
    ]);
  });

  it('cancels a task waiting behind an earlier turn of its context at once, before it reaches the service', async () => {
    const service = new ConfirmedCancelService(() => ({ parts: [] }));
    let ids = 0;
    const tasks = new TaskManager(TEST_A2A_SETTINGS, {
      service,
      logger: silentLogger,
      clock: systemClock,
      newId: () => `id-${(ids += 1)}`,
    });
    const first = await tasks.send({ message }, { blocking: false });
    const waiting = await tasks.send(
      { message: { ...message, messageId: 'm2', contextId: first.contextId } },
      { blocking: false },
    );
    const canceled = await tasks.cancel(waiting.id);
    expect(canceled.status.state).toBe('canceled');
    expect(service.submitted).toHaveLength(1);
    expect(service.asked).toEqual([]);
    const ending = tasks.cancel(first.id);
    service.confirm();
    expect((await ending).status.state).toBe('canceled');
  });
});
