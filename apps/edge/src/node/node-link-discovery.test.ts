import { describe, expect, it } from '@jest/globals';
import { envelope } from '@iop/wire';
import { silentLogger } from '../logging.js';
import type { NodeDiscovered } from '../present/node-discovered.js';
import { defaultNodePayload, mapNodeConfig } from './mapper.js';
import { NodeLink } from './node-link.js';
import { testNode } from './test-support/config-fixture.js';
import { FakeChannel, linkInfo } from './test-support/fake-channel.js';

const REPORT = {
  backends: [
    {
      kind: 'ollama',
      baseUrl: 'http://127.0.0.1:11434',
      models: ['qwen3:8b'],
      version: '0.12.6',
      loadedModels: [],
    },
  ],
  clis: [{ name: 'codex', path: '/bin/codex', version: 'codex-cli 0.46.0' }],
  host: {
    os: 'linux',
    arch: 'x64',
    cpuCores: 4,
    memoryBytes: 8,
    gpus: [],
    agentsSeparateUser: false,
    agentUser: '',
    agentWorkspaceRoot: '',
  },
  discoveredAtUnixMs: 7,
};

function makeLink(): NodeLink {
  return new NodeLink({
    channel: new FakeChannel(),
    info: linkInfo('n1'),
    payload: mapNodeConfig(testNode({ id: 'n1' })),
    logger: silentLogger,
  });
}

describe('NodeLink discovery reports', () => {
  it('has no discovered object until the node reports, then keeps the latest report and tells its listener', () => {
    const link = makeLink();
    const heard: NodeDiscovered[] = [];
    link.onDiscovered((discovered) => heard.push(discovered));
    expect(link.summary().discovered).toBeUndefined();
    expect('discovered' in link.summary()).toBe(false);

    link.handle(envelope.nodeDiscovery(REPORT));
    expect(link.summary().discovered).toEqual(REPORT);
    link.handle(envelope.nodeDiscovery({ ...REPORT, clis: [], discoveredAtUnixMs: 8 }));
    expect(link.discovered?.clis).toEqual([]);
    expect(heard.map((entry) => entry.discoveredAtUnixMs)).toEqual([7, 8]);
  });

  it('keeps the report when the listener throws', () => {
    const link = makeLink();
    link.onDiscovered(() => {
      throw new Error('listener bug');
    });
    link.handle(envelope.nodeDiscovery(REPORT));
    expect(link.discovered?.backends[0]?.models).toEqual(['qwen3:8b']);
  });
});

describe('discovery settings in the node payload', () => {
  it('carries the node’s configured URLs and ports, and the default ports for a node known only to the store', () => {
    const configured = mapNodeConfig({
      ...testNode({ id: 'n1' }),
      discovery: { openai_compat_urls: ['http://10.0.0.5:8000/v1'], local_ports: [] },
    });
    expect(configured.discovery).toEqual({ openaiCompatUrls: ['http://10.0.0.5:8000/v1'], localPorts: [] });
    expect(defaultNodePayload('n9').discovery).toEqual({
      openaiCompatUrls: [],
      localPorts: [8000, 8080, 1234, 30000],
    });
  });
});
