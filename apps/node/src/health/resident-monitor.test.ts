import { afterEach, describe, expect, it } from '@jest/globals';
import { silentLogger, type Logger } from '@iop/logging';
import type { Adapter } from '../adapters/adapter.js';
import { ManualClock } from '@iop/clock';
import { FakeAdapter } from '../runner/test-support/fake-adapter.js';
import { ResidentMonitor } from './resident-monitor.js';

/** A fake Ollama instance: each ask of /api/ps waits until the test answers it (or fails it). */
class FakeResidentAdapter extends FakeAdapter {
  readonly asks: Array<{ answer(models: string[]): void; fail(error: Error): void; signal: AbortSignal }> =
    [];

  constructor(name: string) {
    super(name, 'ollama');
  }

  residentModels(signal: AbortSignal): Promise<string[]> {
    return new Promise((resolve, reject) => {
      // Like the real adapter, an aborted ask rejects at once.
      signal.addEventListener('abort', () => reject(new Error(String(signal.reason))), { once: true });
      this.asks.push({ answer: resolve, fail: reject, signal });
    });
  }

  /** Answers the oldest open ask. */
  answer(models: string[]): void {
    const ask = this.asks.shift();
    if (!ask) throw new Error(`no open ask on ${this.name}`);
    ask.answer(models);
  }

  fail(message: string): void {
    const ask = this.asks.shift();
    if (!ask) throw new Error(`no open ask on ${this.name}`);
    ask.fail(new Error(message));
  }
}

/** Lets promise callbacks run (the fake clock moves time only). */
async function settle(): Promise<void> {
  for (let index = 0; index < 10; index += 1) await Promise.resolve();
}

describe('ResidentMonitor', () => {
  const monitors: ResidentMonitor[] = [];
  afterEach(async () => {
    await Promise.all(monitors.splice(0).map((monitor) => monitor.stop()));
  });

  function setup(options: { intervalMs?: number; adapters?: Adapter[]; logger?: Logger } = {}) {
    const clock = new ManualClock();
    const ollama = new FakeResidentAdapter('ollama-a');
    const cli = new FakeAdapter('cli', 'cli');
    const adapters = options.adapters ?? [ollama, cli];
    let interval = options.intervalMs ?? 5000;
    let changes = 0;
    const monitor = new ResidentMonitor({
      adapters: { list: () => adapters },
      intervalMs: () => interval,
      clock,
      logger: options.logger ?? silentLogger,
      onChange: () => (changes += 1),
      minGapMs: 250,
      timeoutMs: 1000,
    });
    monitors.push(monitor);
    return {
      monitor,
      clock,
      ollama,
      changes: () => changes,
      setInterval: (ms: number) => (interval = ms),
    };
  }

  it('asks each instance that can say at start and every interval, and reports the sorted list', async () => {
    const { monitor, clock, ollama, changes } = setup();
    expect(monitor.snapshot('ollama-a')).toBeUndefined();
    monitor.start();
    clock.advance(0);
    expect(ollama.asks).toHaveLength(1);
    ollama.answer(['qwen3:8b', 'llama3.2:latest']);
    await settle();
    expect(monitor.snapshot('ollama-a')).toEqual({
      models: ['llama3.2:latest', 'qwen3:8b'],
      state: 'fresh',
    });
    expect(monitor.snapshot('cli')).toBeUndefined();
    expect(changes()).toBe(1);
    clock.advance(4999);
    expect(ollama.asks).toHaveLength(0);
    clock.advance(1);
    expect(ollama.asks).toHaveLength(1);
    ollama.answer(['qwen3:8b', 'llama3.2:latest']);
    await settle();
    // Same list: no change announced.
    expect(changes()).toBe(1);
  });

  it('asks again after a run ends, coalescing a burst of run ends into at most two asks', async () => {
    const { monitor, clock, ollama, changes } = setup();
    monitor.start();
    clock.advance(0);
    ollama.answer([]);
    await settle();
    expect(changes()).toBe(1);
    clock.advance(1000);
    monitor.runEnded('ollama-a');
    expect(ollama.asks).toHaveLength(1);
    // 50 more runs end while that ask is open: one more ask after it, not 50.
    for (let index = 0; index < 50; index += 1) monitor.runEnded('ollama-a');
    monitor.runEnded('cli');
    monitor.runEnded('unknown');
    expect(ollama.asks).toHaveLength(1);
    ollama.answer(['llama3.2:latest']);
    await settle();
    expect(monitor.snapshot('ollama-a')?.models).toEqual(['llama3.2:latest']);
    expect(changes()).toBe(2);
    // The queued ask waits for the minimum gap after the previous one started.
    expect(ollama.asks).toHaveLength(0);
    clock.advance(249);
    expect(ollama.asks).toHaveLength(0);
    clock.advance(1);
    expect(ollama.asks).toHaveLength(1);
    for (let index = 0; index < 20; index += 1) monitor.runEnded('ollama-a');
    ollama.answer(['llama3.2:latest']);
    await settle();
    clock.advance(250);
    expect(ollama.asks).toHaveLength(1);
    ollama.answer(['llama3.2:latest']);
    await settle();
    clock.advance(1000);
    expect(ollama.asks).toHaveLength(0);
  });

  it('a round due while a run end waits for its gap asks once, not twice', async () => {
    const { monitor, clock, ollama } = setup({ intervalMs: 1000 });
    monitor.start();
    clock.advance(0);
    ollama.answer([]);
    await settle();
    // A run ends at t=900, more than the gap after the last ask: asked at once; a second run end queues one more.
    clock.advance(900);
    monitor.runEnded('ollama-a');
    expect(ollama.asks).toHaveLength(1);
    monitor.runEnded('ollama-a');
    ollama.answer([]);
    await settle();
    // The queued ask waits 250 ms from t=900; the periodic round is due at t=1000 and takes its place.
    clock.advance(100);
    expect(ollama.asks).toHaveLength(1);
    clock.advance(150);
    expect(ollama.asks).toHaveLength(1);
    ollama.answer([]);
    await settle();
    expect(ollama.asks).toHaveLength(0);
  });

  it('keeps the last list when /api/ps fails or hangs, and marks it stale after 3 intervals', async () => {
    const lines: { level: string; message: string }[] = [];
    const at = (level: string) => (_fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, message });
    const logger: Logger = {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: () => logger,
    };
    const { monitor, clock, ollama, changes } = setup({ intervalMs: 1000, logger });
    monitor.start();
    clock.advance(0);
    ollama.answer(['llama3.2:latest']);
    await settle();
    expect(changes()).toBe(1);
    for (let round = 1; round <= 2; round += 1) {
      clock.advance(1000);
      ollama.fail('connect ECONNREFUSED');
      await settle();
      expect(monitor.snapshot('ollama-a')).toEqual({ models: ['llama3.2:latest'], state: 'fresh' });
    }
    expect(changes()).toBe(1);
    // Third round: the ask hangs and times out after 1000 ms, 4000 ms after the last answer (> 3 × 1000).
    clock.advance(1000);
    expect(ollama.asks).toHaveLength(1);
    expect(ollama.asks[0]?.signal.aborted).toBe(false);
    clock.advance(1000);
    await settle();
    expect(ollama.asks[0]?.signal.aborted).toBe(true);
    ollama.asks.shift();
    expect(monitor.snapshot('ollama-a')).toEqual({ models: ['llama3.2:latest'], state: 'stale' });
    expect(changes()).toBe(2);
    // The backend answers again: fresh.
    clock.advance(1000);
    ollama.answer(['llama3.2:latest']);
    await settle();
    expect(monitor.snapshot('ollama-a')).toEqual({ models: ['llama3.2:latest'], state: 'fresh' });
    expect(changes()).toBe(3);
    // Each failed ask at debug; only the changes of state above debug, once each.
    expect(lines.filter((line) => line.level === 'debug')).toHaveLength(3);
    expect(lines.filter((line) => line.level !== 'debug')).toEqual([
      {
        level: 'info',
        message: 'resident model list of ollama-a is stale: /api/ps has not answered; kept, not placed by',
      },
      { level: 'info', message: 'resident model list of ollama-a is fresh again' },
    ]);
  });

  it('an instance that never answered is unknown, not an empty list', async () => {
    const { monitor, clock, ollama, changes } = setup();
    monitor.start();
    clock.advance(0);
    ollama.fail('connect ECONNREFUSED');
    await settle();
    expect(monitor.snapshot('ollama-a')).toBeUndefined();
    expect(changes()).toBe(0);
  });

  it('interval 0 turns residency off: no asks, nothing known, even after runs', async () => {
    const { monitor, clock, ollama, setInterval } = setup();
    monitor.start();
    clock.advance(0);
    ollama.answer(['llama3.2:latest']);
    await settle();
    setInterval(0);
    expect(monitor.snapshot('ollama-a')).toBeUndefined();
    monitor.runEnded('ollama-a');
    clock.advance(60_000);
    await settle();
    expect(ollama.asks).toHaveLength(0);
    // Turned on again by a refresh: asked at the next look.
    setInterval(5000);
    clock.advance(5000);
    expect(ollama.asks).toHaveLength(1);
  });

  it('stop aborts an open ask and ends the rounds', async () => {
    const { monitor, clock, ollama } = setup();
    monitor.start();
    clock.advance(0);
    const ask = ollama.asks[0];
    await monitor.stop();
    expect(ask?.signal.aborted).toBe(true);
    expect(clock.pending).toBe(0);
    ollama.asks.shift();
    monitor.runEnded('ollama-a');
    clock.advance(10_000);
    expect(ollama.asks).toHaveLength(0);
  });
});
