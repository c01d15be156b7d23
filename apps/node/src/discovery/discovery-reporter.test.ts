import { describe, expect, it } from '@jest/globals';
import type { DiscoverySettings, NodeDiscovery } from '@iop/wire';
import { silentLogger } from '@iop/logging';
import { systemClock } from '@iop/clock';
import { RecordingOutbound } from '../runner/test-support/recording-outbound.js';
import { DiscoveryReporter } from './discovery-reporter.js';

function discovery(models: string[], at = 1): NodeDiscovery {
  return {
    backends: [
      { kind: 'ollama', baseUrl: 'http://127.0.0.1:11434', models, version: '0.12.6', loadedModels: [] },
    ],
    clis: [],
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
    discoveredAtUnixMs: at,
  };
}

/** A discoverer whose passes the test releases one at a time. */
class ScriptedDiscoverer {
  readonly calls: (DiscoverySettings | undefined)[] = [];
  readonly #pending: ((value: NodeDiscovery) => void)[] = [];
  next: NodeDiscovery = discovery(['a']);
  manual = false;

  discover(settings: DiscoverySettings | undefined): Promise<NodeDiscovery> {
    this.calls.push(settings);
    if (!this.manual) return Promise.resolve({ ...this.next, discoveredAtUnixMs: this.calls.length });
    return new Promise((resolve) => this.#pending.push(resolve));
  }

  release(): void {
    this.#pending.shift()?.({ ...this.next, discoveredAtUnixMs: this.calls.length });
  }
}

function reporterWith(discoverer: ScriptedDiscoverer, outbound = new RecordingOutbound()) {
  const settings: DiscoverySettings = { openaiCompatUrls: ['http://h:1'], localPorts: [] };
  const reporter = new DiscoveryReporter({
    discoverer,
    settings: () => settings,
    outbound,
    clock: systemClock,
    logger: silentLogger,
    intervalMs: 60_000,
  });
  return { reporter, outbound, settings };
}

function reports(outbound: RecordingOutbound): NodeDiscovery[] {
  return outbound.sent.flatMap((message) =>
    message.msg?.$case === 'nodeDiscovery' ? [message.msg.nodeDiscovery] : [],
  );
}

describe('DiscoveryReporter', () => {
  it('sends a forced pass, skips an unchanged one, sends a changed one', async () => {
    const discoverer = new ScriptedDiscoverer();
    const { reporter, outbound, settings } = reporterWith(discoverer);
    expect((await reporter.request(true))?.sent).toBe(true);
    expect(discoverer.calls[0]).toBe(settings);
    expect((await reporter.request(false))?.sent).toBe(false);
    expect((await reporter.request(true))?.sent).toBe(true);
    discoverer.next = discovery(['a', 'b']);
    expect((await reporter.request(false))?.sent).toBe(true);
    expect(reports(outbound).map((report) => report.backends[0]?.models)).toEqual([['a'], ['a'], ['a', 'b']]);
    await reporter.stop();
  });

  it('sends again after a report was lost to a disconnect', async () => {
    const discoverer = new ScriptedDiscoverer();
    const { reporter, outbound } = reporterWith(discoverer);
    outbound.connected = false;
    expect((await reporter.request(true))?.sent).toBe(false);
    outbound.connected = true;
    expect((await reporter.request(false))?.sent).toBe(true);
    expect(reports(outbound)).toHaveLength(1);
    await reporter.stop();
  });

  it('never overlaps passes: requests during a pass share one follow-up pass', async () => {
    const discoverer = new ScriptedDiscoverer();
    discoverer.manual = true;
    const { reporter, outbound } = reporterWith(discoverer);
    const first = reporter.request(false);
    const second = reporter.request(false);
    const third = reporter.request(true);
    expect(second).toBe(third);
    expect(discoverer.calls).toHaveLength(1);
    discoverer.release();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(discoverer.calls).toHaveLength(2);
    discoverer.release();
    // The follow-up carries the strongest request (forced): sent although unchanged.
    expect((await third)?.sent).toBe(true);
    expect(reports(outbound)).toHaveLength(2);
    await reporter.stop();
  });

  it('stop() aborts the pass in flight and later requests do nothing', async () => {
    const seen: AbortSignal[] = [];
    const outbound = new RecordingOutbound();
    const reporter = new DiscoveryReporter({
      discoverer: {
        discover: (_settings, signal) =>
          new Promise<NodeDiscovery>((resolve) => {
            seen.push(signal);
            signal.addEventListener('abort', () => resolve(discovery([])), { once: true });
          }),
      },
      settings: () => undefined,
      outbound,
      clock: systemClock,
      logger: silentLogger,
    });
    const pass = reporter.request(true);
    await reporter.stop();
    expect(seen[0]?.aborted).toBe(true);
    expect(await pass).toBeUndefined();
    expect(await reporter.request(true)).toBeUndefined();
    expect(outbound.sent).toEqual([]);
  });
});
