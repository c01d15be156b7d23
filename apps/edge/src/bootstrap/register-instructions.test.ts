import type os from 'node:os';
import { describe, expect, it } from '@jest/globals';
import type { EdgeConfig } from '@iop/config';
import { renderBootstrapContent, sha256Text } from './bootstrap-content.js';
import { formatInstallInstructions, installLines } from './register-instructions.js';

const interfaces = () => ({}) as ReturnType<typeof os.networkInterfaces>;
const config = {
  edge: { listen: '0.0.0.0:19090' },
  bootstrap: { listen: '0.0.0.0:19091', public_url: 'http://198.51.100.7:19091', artifact_dir: '/a' },
} as unknown as EdgeConfig;
const artifactSet = {
  dir: '/a',
  version: '1.2.3',
  artifacts: [
    {
      file: 'iop-node-1.2.3-linux-amd64.tar.gz',
      version: '1.2.3',
      os: 'linux',
      arch: 'amd64',
      sha256: '3'.repeat(64),
      size: 10,
    },
  ],
} as const;

describe('node register install lines', () => {
  it('pin the SHA-256 of exactly the install scripts the bootstrap server renders, and the edge key', () => {
    const fingerprint = `sha256:${'9'.repeat(64)}`;
    const context = {
      interfaces,
      artifactSet: { ...artifactSet, artifacts: [...artifactSet.artifacts] },
      edgeVersion: '0.0.0',
      edgeFingerprint: fingerprint,
    };
    const lines = installLines(
      config,
      { nodeId: 'n1', token: 'tok', edgeAddress: '198.51.100.7:19090' },
      context,
    );
    const served = renderBootstrapContent(config, context.artifactSet, {
      ...context,
      fallbackVersion: '0.0.0',
    });
    expect(lines.installSha256).toEqual({
      sh: sha256Text(served.installSh),
      ps1: sha256Text(served.installPs1),
    });
    expect(served.installSh).toContain(`${'3'.repeat(64)}  iop-node-1.2.3-linux-amd64.tar.gz`);
    expect(served.installSh).toContain(`IOP_DEFAULT_EDGE_FINGERPRINT='${fingerprint}'`);
    const text = formatInstallInstructions(lines).join('\n');
    expect(text).toContain(
      `    f="$(mktemp)" && curl -fsSL 'http://198.51.100.7:19091/install.sh' -o "$f" && ` +
        `if { sha256sum "$f" 2>/dev/null || shasum -a 256 "$f"; } | grep -q '^${lines.installSha256.sh} '; ` +
        `then IOP_TOKEN='tok' bash "$f" --node-id 'n1' --edge '198.51.100.7:19090' --edge-fingerprint '${fingerprint}' ` +
        `--artifact-url 'http://198.51.100.7:19091/artifacts'; `,
    );
    expect(text).toContain(`.Hash -ne '${lines.installSha256.ps1}'`);
    // The service variant passes --service to install.sh (appending it to the line would not).
    expect(lines.unixService).toBe(
      lines.unix.replace(
        "--artifact-url 'http://198.51.100.7:19091/artifacts'; ",
        "--artifact-url 'http://198.51.100.7:19091/artifacts' --service; ",
      ),
    );
    expect(text).toContain(`    ${lines.unixService}`);
    expect(text).toContain(`the edge's key (${fingerprint})`);
  });

  it('warn loudly when the edge runs without TLS', () => {
    const lines = installLines(
      config,
      { nodeId: 'n1', token: 'tok', edgeAddress: '198.51.100.7:19090' },
      {
        interfaces,
        artifactSet: { dir: '/a', version: undefined, artifacts: [] },
        edgeVersion: '0.0.0',
        edgeFingerprint: undefined,
      },
    );
    expect(lines.unix).not.toContain('--edge-fingerprint');
    expect(formatInstallInstructions(lines).join('\n')).toContain('WARNING: edge.tls is off');
  });
});
