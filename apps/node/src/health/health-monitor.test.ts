import { afterEach, describe, expect, it } from '@jest/globals';
import { ProviderHealth, ResidentState, type ProviderConfig, type ProviderStatusReport } from '@iop/wire';
import { AdapterRegistry } from '../adapters/registry.js';
import { ManualClock, systemClock, type Clock } from '@iop/clock';
import { silentLogger, type Logger } from '@iop/logging';
import { adapterInstance, fakeFactory } from '../runner/test-support/fake-adapter.js';
import { RecordingOutbound } from '../runner/test-support/recording-outbound.js';
import { HealthMonitor } from './health-monitor.js';
import type { ResidentSnapshot } from './resident-monitor.js';

function provider(
  id: string,
  adapter: string,
  enabled = true,
  healthProbeIntervalMs?: number,
): ProviderConfig {
  return {
    id,
    type: 'ollama',
    category: 'local',
    adapter,
    models: [],
    capacity: 1,
    enabled,
    lifecycleCapabilities: [],
    healthProbeIntervalMs,
  };
}

function reports(outbound: RecordingOutbound): ProviderStatusReport[] {
  return outbound.sent.flatMap((message) =>
    message.msg?.$case === 'providerStatusReport' ? [message.msg.providerStatusReport] : [],
  );
}

describe('HealthMonitor', () => {
  const monitors: HealthMonitor[] = [];
  afterEach(async () => {
    await Promise.all(monitors.splice(0).map((monitor) => monitor.stop()));
  });

  function setup(
    providers: ProviderConfig[],
    intervalMs = 60_000,
    clock: Clock = systemClock,
    logger: Logger = silentLogger,
  ) {
    const factory = fakeFactory('ollama');
    const registry = new AdapterRegistry({
      factories: { ollama: factory },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    registry.apply([adapterInstance('ollama-a', 'ollama'), adapterInstance('ollama-b', 'ollama')]);
    const outbound = new RecordingOutbound();
    const monitor = new HealthMonitor({
      adapters: registry,
      providers: () => providers,
      intervalMs: () => intervalMs,
      outbound,
      clock,
      logger,
      probeTimeoutMs: 50,
    });
    monitors.push(monitor);
    return { monitor, outbound, adapters: factory.built };
  }

  it('reports every enabled provider on the first round and nothing while nothing changes', async () => {
    const { monitor, outbound, adapters } = setup([
      provider('gpu-a', 'ollama-a'),
      provider('gpu-b', 'ollama-b'),
      provider('off', 'ollama-a', false),
    ]);
    adapters[0].health = { health: 'healthy', detail: 'ok', models: ['b', 'a'] };
    await monitor.probeRound();
    expect(reports(outbound)).toHaveLength(1);
    expect(
      reports(outbound)[0].providers.map((entry) => [entry.providerId, entry.health, entry.models]),
    ).toEqual([
      ['gpu-a', ProviderHealth.PROVIDER_HEALTH_HEALTHY, ['a', 'b']],
      ['gpu-b', ProviderHealth.PROVIDER_HEALTH_HEALTHY, []],
    ]);
    expect(await monitor.probeRound()).toBeUndefined();
    expect(reports(outbound)).toHaveLength(1);
  });

  it('reports again when a provider changes, and after requestFullReport', async () => {
    const { monitor, outbound, adapters } = setup([provider('gpu-a', 'ollama-a')]);
    await monitor.probeRound();
    adapters[0].health = { health: 'unreachable', detail: 'connection refused', models: [] };
    await monitor.probeRound();
    expect(reports(outbound)).toHaveLength(2);
    expect(reports(outbound)[1].providers[0]).toMatchObject({
      health: ProviderHealth.PROVIDER_HEALTH_UNREACHABLE,
      detail: 'connection refused',
    });
    monitor.requestFullReport();
    await monitor.probeRound();
    expect(reports(outbound)).toHaveLength(3);
  });

  it('reports a provider whose adapter is missing, throws or hangs, without failing the round', async () => {
    const { monitor, outbound, adapters } = setup([
      provider('ghost', 'nope'),
      provider('thrower', 'ollama-a'),
      provider('hanger', 'ollama-b'),
    ]);
    adapters[0].probeHealth = () => Promise.reject(new Error('boom'));
    adapters[1].probeHealth = () => new Promise(() => undefined);
    await monitor.probeRound();
    const [report] = reports(outbound);
    expect(report.providers.map((entry) => [entry.providerId, entry.health])).toEqual([
      ['ghost', ProviderHealth.PROVIDER_HEALTH_UNREACHABLE],
      ['thrower', ProviderHealth.PROVIDER_HEALTH_UNHEALTHY],
      ['hanger', ProviderHealth.PROVIDER_HEALTH_UNREACHABLE],
    ]);
    expect(report.providers[2].detail).toContain('timed out');
  });

  it('gives each provider of a CLI adapter the health of the profiles it serves', async () => {
    const cli = (id: string, models: string[]) => ({ ...provider(id, 'ollama-a'), type: 'cli', models });
    const { monitor, outbound, adapters } = setup([
      cli('claude-provider', ['claude']),
      cli('codex-provider', ['codex']),
      cli('both', ['claude', 'codex']),
    ]);
    adapters[0].health = {
      health: 'unhealthy',
      cause: 'command_not_found',
      detail: 'profile codex: command codex was not found on its PATH',
      models: [],
      targets: {
        claude: { health: 'healthy', detail: 'claude: 2.0.14' },
        codex: {
          health: 'unhealthy',
          cause: 'command_not_found',
          detail: 'profile codex: command codex was not found on its PATH',
        },
      },
    };
    await monitor.probeRound();
    expect(
      reports(outbound)[0].providers.map((entry) => [
        entry.providerId,
        entry.health,
        entry.cause,
        entry.detail,
      ]),
    ).toEqual([
      ['claude-provider', ProviderHealth.PROVIDER_HEALTH_HEALTHY, '', 'claude: 2.0.14'],
      [
        'codex-provider',
        ProviderHealth.PROVIDER_HEALTH_UNHEALTHY,
        'command_not_found',
        'profile codex: command codex was not found on its PATH',
      ],
      [
        'both',
        ProviderHealth.PROVIDER_HEALTH_UNHEALTHY,
        'command_not_found',
        'profile codex: command codex was not found on its PATH',
      ],
    ]);
  });

  it('reports the cause of a failed probe (timeout, error) and none for a healthy one', async () => {
    const { monitor, outbound, adapters } = setup([
      provider('ghost', 'nope'),
      provider('refused', 'ollama-a'),
      provider('hanger', 'ollama-b'),
    ]);
    adapters[0].health = {
      health: 'unreachable',
      detail: 'cannot reach http://127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9',
      cause: 'connection_refused',
      models: [],
    };
    adapters[1].probeHealth = () => new Promise(() => undefined);
    await monitor.probeRound();
    expect(reports(outbound)[0].providers.map((entry) => [entry.providerId, entry.cause])).toEqual([
      ['ghost', 'error'],
      ['refused', 'connection_refused'],
      ['hanger', 'timeout'],
    ]);
    adapters[0].health = { health: 'healthy', detail: 'ok', models: [] };
    await monitor.probeRound();
    expect(reports(outbound)[1].providers[1]).toMatchObject({ providerId: 'refused', cause: '' });
  });

  it('logs each failure at debug, and at warn only the first one and each change of health or cause', async () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const at = (level: string) => (fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, fields, message });
    const logger: Logger = {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: () => logger,
    };
    const { monitor, adapters } = setup([provider('gpu-a', 'ollama-a')], 60_000, systemClock, logger);
    const refused = {
      health: 'unreachable' as const,
      detail: 'cannot reach http://127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9',
      cause: 'connection_refused' as const,
      models: [],
    };
    adapters[0].health = refused;
    await monitor.probeRound();
    await monitor.probeRound();
    adapters[0].health = {
      health: 'unhealthy',
      detail: 'HTTP 404: not found',
      cause: 'http_status',
      models: [],
    };
    await monitor.probeRound();
    adapters[0].health = { health: 'healthy', detail: '1 model(s) served', models: ['m'] };
    await monitor.probeRound();
    await monitor.probeRound();
    const summary = lines.map((line) => [line.level, line.fields['cause'] ?? line.fields['health']]);
    expect(summary).toEqual([
      ['debug', 'connection_refused'],
      ['warn', 'connection_refused'],
      ['debug', 'connection_refused'],
      ['debug', 'http_status'],
      ['warn', 'http_status'],
      ['info', 'healthy'],
    ]);
    expect(lines[1]).toMatchObject({
      fields: { providerId: 'gpu-a', adapter: 'ollama-a', health: 'unreachable', detail: refused.detail },
      message: `provider gpu-a is unreachable: connection_refused (${refused.detail})`,
    });
    expect(lines[4].fields['previousHealth']).toBe('unreachable');
    expect(lines[5]).toMatchObject({
      message: 'provider health probe recovered',
      fields: { previousCause: 'http_status' },
    });
  });

  it('resends a report that could not be delivered', async () => {
    const { monitor, outbound } = setup([provider('gpu-a', 'ollama-a')]);
    outbound.connected = false;
    await monitor.probeRound();
    outbound.connected = true;
    await monitor.probeRound();
    expect(reports(outbound)).toHaveLength(1);
  });

  it('probes periodically once started, and stops', async () => {
    const { monitor, outbound, adapters } = setup([provider('gpu-a', 'ollama-a')], 20);
    let probes = 0;
    adapters[0].probeHealth = () => {
      probes += 1;
      return Promise.resolve({ health: 'healthy', detail: `round ${probes}`, models: [] });
    };
    monitor.start();
    const deadline = Date.now() + 2000;
    while (reports(outbound).length < 3 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(reports(outbound).length).toBeGreaterThanOrEqual(3);
    await monitor.stop();
    const count = probes;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(probes).toBe(count);
  });

  /** Counts probes per adapter while time is driven by `clock`. */
  function counting(adapters: { probeHealth: unknown }[]): number[] {
    const counts = adapters.map(() => 0);
    adapters.forEach((adapter, index) => {
      adapter.probeHealth = () => {
        counts[index] = (counts[index] ?? 0) + 1;
        return Promise.resolve({ health: 'healthy' as const, detail: 'ok', models: [] });
      };
    });
    return counts;
  }

  async function runFor(clock: ManualClock, ms: number, stepMs = 250): Promise<void> {
    for (let elapsed = 0; elapsed < ms; elapsed += stepMs) {
      clock.advance(stepMs);
      for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it('health_probe_interval_ms 0 disables probes: none in 5 s, even after a registration report', async () => {
    const clock = new ManualClock();
    const { monitor, outbound, adapters } = setup([provider('gpu-a', 'ollama-a')], 0, clock);
    const counts = counting(adapters);
    monitor.start();
    monitor.requestFullReport();
    await runFor(clock, 5000);
    expect(counts).toEqual([0, 0]);
    expect(clock.pendingDelays()).toEqual([]);
    // The registration report is still sent, without the unprobed provider (the edge shows it `unknown`).
    expect(reports(outbound).map((report) => report.providers)).toEqual([[]]);
  });

  it("a provider's own interval overrides the node's: on at 1 s under a disabled node, off under a 1 s node", async () => {
    const clock = new ManualClock();
    const { monitor, adapters } = setup(
      [provider('fast', 'ollama-a', true, 1000), provider('node-default', 'ollama-b')],
      0,
      clock,
    );
    const counts = counting(adapters);
    monitor.start();
    await runFor(clock, 5000);
    // First round at start, then one per second; the provider without its own interval follows the node (off).
    expect(counts[0]).toBeGreaterThanOrEqual(5);
    expect(counts[0]).toBeLessThanOrEqual(6);
    expect(counts[1]).toBe(0);
    await monitor.stop();

    const clock2 = new ManualClock();
    const second = setup(
      [provider('quiet', 'ollama-a', true, 0), provider('node-default', 'ollama-b')],
      1000,
      clock2,
    );
    const counts2 = counting(second.adapters);
    second.monitor.start();
    await runFor(clock2, 5000);
    expect(counts2[0]).toBe(0);
    expect(counts2[1]).toBeGreaterThanOrEqual(5);
  });
});

describe('HealthMonitor resident models', () => {
  it('carries each provider backend resident list and state, and re-sends it on residentChanged without probing', async () => {
    const factory = fakeFactory('ollama');
    const registry = new AdapterRegistry({
      factories: { ollama: factory },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    registry.apply([adapterInstance('ollama-a', 'ollama'), adapterInstance('ollama-b', 'ollama')]);
    const outbound = new RecordingOutbound();
    const resident = new Map<string, ResidentSnapshot>([
      ['ollama-a', { models: ['llama3.2:latest'], state: 'fresh' }],
    ]);
    const monitor = new HealthMonitor({
      adapters: registry,
      providers: () => [provider('gpu-a', 'ollama-a'), provider('gpu-b', 'ollama-b')],
      intervalMs: () => 60_000,
      outbound,
      clock: systemClock,
      logger: silentLogger,
      probeTimeoutMs: 50,
      resident: { snapshot: (name) => resident.get(name) },
    });
    try {
      // Before the monitor runs, a resident change sends nothing.
      expect(await monitor.residentChanged()).toBeUndefined();
      let probeCount = 0;
      for (const adapter of factory.built) {
        adapter.probeHealth = () => {
          probeCount += 1;
          return Promise.resolve({ health: 'healthy', detail: 'ok', models: [] });
        };
      }
      monitor.start();
      await monitor.probeRound();
      const probesBefore = probeCount;
      const entries = () =>
        reports(outbound)
          .at(-1)
          ?.providers.map((entry) => [entry.providerId, entry.residentModels, entry.residentState]);
      expect(entries()).toEqual([
        ['gpu-a', ['llama3.2:latest'], ResidentState.RESIDENT_STATE_FRESH],
        ['gpu-b', [], ResidentState.RESIDENT_STATE_UNSPECIFIED],
      ]);
      const sentBefore = reports(outbound).length;
      // Nothing changed: nothing sent.
      expect(await monitor.residentChanged()).toBeUndefined();
      resident.set('ollama-a', { models: ['llama3.2:latest'], state: 'stale' });
      resident.set('ollama-b', { models: ['qwen3:8b'], state: 'fresh' });
      await monitor.residentChanged();
      expect(reports(outbound)).toHaveLength(sentBefore + 1);
      expect(entries()).toEqual([
        ['gpu-a', ['llama3.2:latest'], ResidentState.RESIDENT_STATE_STALE],
        ['gpu-b', ['qwen3:8b'], ResidentState.RESIDENT_STATE_FRESH],
      ]);
      expect(probeCount).toBe(probesBefore);
    } finally {
      await monitor.stop();
    }
  });
});

describe('HealthMonitor resident models without health probes', () => {
  it('reports an unprobed provider whose backend list is known, with health unspecified', async () => {
    const clock = new ManualClock();
    const factory = fakeFactory('ollama');
    const registry = new AdapterRegistry({
      factories: { ollama: factory },
      adapterDeps: { fetch, logger: silentLogger, now: Date.now, clock: systemClock },
      logger: silentLogger,
    });
    registry.apply([adapterInstance('ollama-a', 'ollama'), adapterInstance('ollama-b', 'ollama')]);
    const outbound = new RecordingOutbound();
    const resident = new Map<string, ResidentSnapshot>();
    const monitor = new HealthMonitor({
      adapters: registry,
      providers: () => [provider('gpu-a', 'ollama-a'), provider('gpu-b', 'ollama-b')],
      intervalMs: () => 0,
      outbound,
      clock,
      logger: silentLogger,
      resident: { snapshot: (name) => resident.get(name) },
    });
    try {
      monitor.start();
      clock.advance(0);
      await monitor.probeRound();
      // Nothing probed, nothing known: nothing to report.
      expect(reports(outbound)).toHaveLength(0);
      resident.set('ollama-b', { models: ['llama3.2:latest'], state: 'fresh' });
      await monitor.residentChanged();
      expect(reports(outbound).at(-1)?.providers).toEqual([
        {
          providerId: 'gpu-b',
          health: ProviderHealth.PROVIDER_HEALTH_UNSPECIFIED,
          detail: '',
          cause: '',
          checkedAtUnixMs: 0,
          models: [],
          residentModels: ['llama3.2:latest'],
          residentState: ResidentState.RESIDENT_STATE_FRESH,
        },
      ]);
      expect(factory.built.every((adapter) => adapter.runs.length === 0)).toBe(true);
    } finally {
      await monitor.stop();
    }
  });
});
