import { ManualClock } from '@iop/clock';
import { describe, it, expect } from '@jest/globals';
import { isRefreshError } from './errors.js';
import { createSerialGate } from './serial-gate.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('createSerialGate', () => {
  it('runs tasks one at a time in arrival order', async () => {
    const gate = createSerialGate({ waitMs: 1000, clock: new ManualClock() });
    const log: string[] = [];
    const hold = deferred();
    const first = gate.run(async () => {
      log.push('first start');
      await hold.promise;
      log.push('first end');
      return 1;
    });
    const second = gate.run(() => {
      log.push('second');
      return Promise.resolve(2);
    });
    const third = gate.run(() => Promise.reject(new Error('third failed')));
    const fourth = gate.run(() => Promise.resolve(4));
    expect(gate.busy).toBe(true);
    expect(gate.waiting).toBe(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['first start']);
    hold.resolve();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    await expect(third).rejects.toThrow('third failed');
    // A failed task does not jam the gate.
    expect(await fourth).toBe(4);
    expect(log).toEqual(['first start', 'first end', 'second']);
    expect(gate.busy).toBe(false);
    expect(gate.waiting).toBe(0);
  });

  it('fails a waiter with refresh_busy after waitMs and keeps serving later tasks', async () => {
    const clock = new ManualClock();
    const gate = createSerialGate({ waitMs: 50, label: 'config refresh', clock });
    const hold = deferred();
    const running = gate.run(() => hold.promise);
    let settled = false;
    const waiting = gate.run(() => Promise.resolve('never')).catch((caught: unknown) => caught);
    void waiting.then(() => (settled = true));
    clock.advance(49);
    await Promise.resolve();
    expect(settled).toBe(false);
    expect(gate.waiting).toBe(1);
    clock.advance(1);
    const error = await waiting;
    expect(isRefreshError(error) && error.code).toBe('refresh_busy');
    expect((error as Error).message).toBe(
      'another config refresh is still running after waiting 50 ms; try again',
    );
    expect(gate.waiting).toBe(0);
    hold.resolve();
    await running;
    expect(await gate.run(() => Promise.resolve('next'))).toBe('next');
  });

  it('a task that throws synchronously rejects and releases the gate', async () => {
    const gate = createSerialGate({ waitMs: 100, clock: new ManualClock() });
    await expect(
      gate.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    expect(gate.busy).toBe(false);
  });

  it('close() rejects waiting tasks and refuses new ones; the running one completes', async () => {
    const gate = createSerialGate({ waitMs: 10_000, clock: new ManualClock() });
    const hold = deferred();
    const running = gate.run(async () => {
      await hold.promise;
      return 'done';
    });
    const waiting = gate.run(() => Promise.resolve('never'));
    gate.close();
    await expect(waiting).rejects.toMatchObject({ code: 'refresh_closed' });
    await expect(gate.run(() => Promise.resolve('x'))).rejects.toMatchObject({ code: 'refresh_closed' });
    hold.resolve();
    expect(await running).toBe('done');
  });
});
