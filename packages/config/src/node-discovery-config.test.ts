import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from './load-config.js';
import { DEFAULT_DISCOVERY_LOCAL_PORTS } from './types.js';

function withNode(nodeYaml: string) {
  return parseConfigText(`edge: { id: e1 }\nnodes:\n  - id: n1\n${nodeYaml}`, 'edge.yaml');
}

describe('nodes[].discovery', () => {
  it('defaults to no extra URLs and the usual loopback ports', () => {
    const result = withNode('');
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.nodes[0]?.discovery).toEqual({
      openai_compat_urls: [],
      local_ports: [...DEFAULT_DISCOVERY_LOCAL_PORTS],
    });
    expect(DEFAULT_DISCOVERY_LOCAL_PORTS).toEqual([8000, 8080, 1234, 30000]);
  });

  it('keeps configured URLs and ports, and an empty port list turns the port probes off', () => {
    const result = withNode(
      "    discovery: { openai_compat_urls: ['http://10.0.0.5:8000/v1', 'http://127.0.0.1:9000'], local_ports: [] }\n",
    );
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.config.nodes[0]?.discovery).toEqual({
      openai_compat_urls: ['http://10.0.0.5:8000/v1', 'http://127.0.0.1:9000'],
      local_ports: [],
    });
  });

  it('rejects a URL that is not http(s), a port out of range and unknown keys, with their paths', () => {
    const result = withNode(
      "    discovery: { openai_compat_urls: ['ftp://x'], local_ports: [70000], ports: [1] }\n",
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const paths = result.issues.map((issue) => issue.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'nodes[0].discovery.openai_compat_urls[0]',
        'nodes[0].discovery.local_ports[0]',
        'nodes[0].discovery.ports',
      ]),
    );
  });
});
