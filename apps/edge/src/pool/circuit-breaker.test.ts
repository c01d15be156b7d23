import { describe, expect, it } from '@jest/globals';
import type { CircuitBreakerConfig } from '@iop/config';
import { ManualClock } from '@iop/clock';
import { silentLogger } from '../logging.js';
import { CircuitBreaker, type CircuitState } from './circuit-breaker.js';

const SETTINGS: CircuitBreakerConfig = {
  consecutive_failures: 3,
  failure_rate: 0.5,
  window_ms: 10_000,
  min_requests: 6,
  cooldown_ms: 1_000,
};

function breaker(settings: Partial<CircuitBreakerConfig> = {}) {
  const clock = new ManualClock();
  const transitions: [string, CircuitState, CircuitState][] = [];
  const circuits = new CircuitBreaker({
    settings: { ...SETTINGS, ...settings },
    clock,
    logger: silentLogger,
    onChange: (providerId, from, to) => transitions.push([providerId, from, to]),
  });
  return { clock, circuits, transitions };
}

describe('CircuitBreaker', () => {
  it('stays closed for an unknown provider and admits every run', () => {
    const { circuits } = breaker();
    expect(circuits.state('p')).toBe('closed');
    expect(circuits.admits('p')).toBe(true);
    expect(circuits.leased('p')).toBe(false);
  });

  it('opens after consecutive_failures failures in a row, and a success in between resets the count', () => {
    const { circuits, transitions } = breaker();
    circuits.failed('p', 'upstream_unreachable');
    circuits.failed('p', 'upstream_unreachable');
    circuits.succeeded('p');
    circuits.failed('p', 'upstream_5xx');
    circuits.failed('p', 'upstream_5xx');
    expect(circuits.state('p')).toBe('closed');
    circuits.failed('p', 'upstream_5xx');
    expect(circuits.state('p')).toBe('open');
    expect(circuits.admits('p')).toBe(false);
    expect(transitions).toEqual([['p', 'closed', 'open']]);
    expect(circuits.state('q')).toBe('closed');
  });

  it('opens on the failure rate over the window once min_requests were seen, not before', () => {
    const { circuits, clock } = breaker({ consecutive_failures: 100 });
    // 2 failures of 4: 50 %, but fewer than min_requests (6).
    for (const failed of [true, false, true, false]) {
      if (failed) circuits.failed('p', 'upstream_429');
      else circuits.succeeded('p');
    }
    expect(circuits.state('p')).toBe('closed');
    circuits.succeeded('p');
    clock.advance(100);
    circuits.failed('p', 'upstream_429');
    // 3 of 6 = 50 % ≥ failure_rate.
    expect(circuits.state('p')).toBe('open');
  });

  it('forgets outcomes older than the window', () => {
    const { circuits, clock } = breaker({ consecutive_failures: 100 });
    for (let index = 0; index < 5; index += 1) circuits.failed('p', 'upstream_error');
    clock.advance(11_000);
    for (let index = 0; index < 5; index += 1) circuits.succeeded('p');
    circuits.failed('p', 'upstream_error');
    // Only the last 6 count: 1 of 6.
    expect(circuits.state('p')).toBe('closed');
  });

  it('turns half-open after the cool-down and admits exactly one probe; its success closes the circuit', () => {
    const { circuits, clock, transitions } = breaker();
    for (let index = 0; index < 3; index += 1) circuits.failed('p', 'node_busy');
    clock.advance(999);
    expect(circuits.state('p')).toBe('open');
    clock.advance(1);
    expect(circuits.state('p')).toBe('half_open');
    expect(circuits.admits('p')).toBe(true);
    expect(circuits.leased('p')).toBe(true);
    expect(circuits.admits('p')).toBe(false);
    expect(circuits.leased('p')).toBe(false);
    circuits.succeeded('p');
    expect(circuits.state('p')).toBe('closed');
    expect(circuits.admits('p')).toBe(true);
    expect(transitions.map(([, , to]) => to)).toEqual(['open', 'half_open', 'closed']);
    // Closed again from scratch: two failures do not reopen it.
    circuits.failed('p', 'node_busy');
    circuits.failed('p', 'node_busy');
    expect(circuits.state('p')).toBe('closed');
  });

  it('re-opens when the probe fails, for another full cool-down', () => {
    const { circuits, clock } = breaker();
    for (let index = 0; index < 3; index += 1) circuits.failed('p', 'node_lost');
    clock.advance(1_000);
    expect(circuits.leased('p')).toBe(true);
    circuits.failed('p', 'node_lost');
    expect(circuits.state('p')).toBe('open');
    clock.advance(999);
    expect(circuits.admits('p')).toBe(false);
    clock.advance(1);
    expect(circuits.admits('p')).toBe(true);
  });

  it('frees the probe slot when the probe ends without a verdict (cancelled)', () => {
    const { circuits, clock } = breaker();
    for (let index = 0; index < 3; index += 1) circuits.failed('p', 'upstream_unreachable');
    clock.advance(1_000);
    expect(circuits.leased('p')).toBe(true);
    expect(circuits.admits('p')).toBe(false);
    circuits.released('p');
    expect(circuits.state('p')).toBe('half_open');
    expect(circuits.admits('p')).toBe(true);
  });

  it('ignores outcomes while open (runs placed before it opened)', () => {
    const { circuits, clock } = breaker();
    for (let index = 0; index < 3; index += 1) circuits.failed('p', 'upstream_5xx');
    circuits.succeeded('p');
    circuits.failed('p', 'upstream_5xx');
    clock.advance(1_000);
    expect(circuits.state('p')).toBe('half_open');
  });

  it('applies new thresholds live and forgets providers that left the config', () => {
    const { circuits } = breaker();
    circuits.applyConfig({ ...SETTINGS, consecutive_failures: 1 });
    circuits.failed('p', 'upstream_timeout');
    circuits.failed('q', 'upstream_timeout');
    expect(circuits.notClosed()).toEqual([
      { providerId: 'p', state: 'open' },
      { providerId: 'q', state: 'open' },
    ]);
    circuits.retain(new Set(['q']));
    expect(circuits.state('p')).toBe('closed');
    expect(circuits.state('q')).toBe('open');
  });
});
