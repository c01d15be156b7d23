import { describe, expect, it } from '@jest/globals';
import { parseConfigText } from '@iop/config';
import { nodeFacingAddress } from './node-facing-address.js';

function config(text: string) {
  const result = parseConfigText(`edge: { id: e1, listen: '0.0.0.0:19090' }\n${text}`, 'edge.yaml');
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const interfaces = () => ({
  eth0: [
    {
      address: '10.1.2.3',
      netmask: '255.0.0.0',
      family: 'IPv4' as const,
      mac: '00:00:00:00:00:00',
      internal: false,
      cidr: '10.1.2.3/8',
    },
  ],
});

describe('nodeFacingAddress', () => {
  it('is bootstrap.edge_address when set, a list of every edge in cluster mode included', () => {
    expect(
      nodeFacingAddress(
        config(`bootstrap: { edge_address: 'a.example:19090,b.example:19090' }\n`),
        interfaces,
      ),
    ).toBe('a.example:19090,b.example:19090');
  });

  it('replaces a wildcard edge.listen host with this machine’s address', () => {
    expect(nodeFacingAddress(config(''), interfaces)).toBe('10.1.2.3:19090');
  });
});
