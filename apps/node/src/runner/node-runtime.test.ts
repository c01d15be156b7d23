import { describe, expect, it } from '@jest/globals';
import type { NodeConfigPayload } from '@iop/wire';
import { DEFAULT_RESIDENT_POLL_INTERVAL_MS } from '../health/resident-monitor.js';
import { NodeSettings } from './node-runtime.js';

function payload(fields: Partial<NodeConfigPayload>): NodeConfigPayload {
  return {
    nodeId: 'n1',
    alias: 'n1',
    maxConcurrency: 4,
    adapters: [],
    providers: [],
    revision: 'r',
    healthProbeIntervalMs: 0,
    discovery: { openaiCompatUrls: [], localPorts: [] },
    ...fields,
  };
}

describe('NodeSettings', () => {
  it("resident_poll_interval_ms: the payload's, 0 = off; the default without a payload or from an older edge", () => {
    const settings = new NodeSettings();
    expect(settings.residentPollIntervalMs()).toBe(DEFAULT_RESIDENT_POLL_INTERVAL_MS);
    expect(DEFAULT_RESIDENT_POLL_INTERVAL_MS).toBe(5000);
    settings.payload = payload({});
    expect(settings.residentPollIntervalMs()).toBe(5000);
    settings.payload = payload({ residentPollIntervalMs: 1200 });
    expect(settings.residentPollIntervalMs()).toBe(1200);
    settings.payload = payload({ residentPollIntervalMs: 0 });
    expect(settings.residentPollIntervalMs()).toBe(0);
  });
});
