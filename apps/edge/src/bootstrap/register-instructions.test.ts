import type os from 'node:os';
import { describe, expect, it } from '@jest/globals';
import type { EdgeConfig } from '@iop/config';
import { formatInstallInstructions, installLines } from './register-instructions.js';

const interfaces = () => ({}) as ReturnType<typeof os.networkInterfaces>;

describe('node register install lines', () => {
  it('prints both one-liners with the public URL, edge address, node id and token', () => {
    const config = {
      bootstrap: { listen: '0.0.0.0:19091', public_url: 'http://198.51.100.7:19091', artifact_dir: '/a' },
    } as unknown as EdgeConfig;
    const lines = installLines(
      config,
      { nodeId: 'n1', token: 'tok', edgeAddress: '198.51.100.7:19090' },
      interfaces,
    );
    const text = formatInstallInstructions(lines).join('\n');
    expect(text).toContain(
      "    curl -fsSL 'http://198.51.100.7:19091/install.sh' | IOP_TOKEN='tok' bash -s -- --node-id 'n1' " +
        "--edge '198.51.100.7:19090' --artifact-url 'http://198.51.100.7:19091/artifacts'",
    );
    expect(text).toContain(
      "    iex (irm 'http://198.51.100.7:19091/install.ps1'); Start-IopNode -NodeId 'n1' -Token 'tok' " +
        "-Edge '198.51.100.7:19090' -ArtifactUrl 'http://198.51.100.7:19091/artifacts'",
    );
  });
});
