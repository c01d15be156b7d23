// The bootstrap part of `iop-edge node register`'s output: complete, ready-to-paste install lines for Linux/macOS
// and Windows with this edge's real URLs, the node's token (printed once, like the token itself), the edge's key
// fingerprint and the SHA-256 of the exact install script the bootstrap server will send (rendered here from the
// same config and artifact set, so the pin matches).
import type { EdgeConfig } from '@iop/config';
import type { ArtifactSet } from './artifact-set.js';
import { renderBootstrapContent } from './bootstrap-content.js';
import type { NetworkInterfaces } from '../http/host-guard.js';
import { unixInstallCommand, windowsInstallCommand } from './bootstrap-urls.js';

export interface InstallLines {
  publicUrl: string;
  unix: string;
  /** The Linux/macOS line with --service (systemd unit / launchd agent; as root on Linux the iop-node user). */
  unixService: string;
  windows: string;
  /** sha256:<hex> of the edge's key; '' when edge.tls is off. */
  edgeFingerprint: string;
  /** SHA-256 of install.sh / install.ps1 the lines pin. */
  installSha256: { sh: string; ps1: string };
}

export interface InstallLinesContext {
  interfaces: NetworkInterfaces;
  /** What the bootstrap server serves (artifact_dir's SHA256SUMS). */
  artifactSet: ArtifactSet;
  edgeVersion: string;
  edgeFingerprint: string | undefined;
}

export function installLines(
  config: EdgeConfig,
  values: { nodeId: string; token: string; edgeAddress: string },
  context: InstallLinesContext,
): InstallLines {
  const content = renderBootstrapContent(config, context.artifactSet, {
    interfaces: context.interfaces,
    fallbackVersion: context.edgeVersion,
    edgeFingerprint: context.edgeFingerprint,
  });
  const publicUrl = content.manifest.public_url;
  const edgeFingerprint = content.manifest.edge_fingerprint;
  const input = { publicUrl, edgeFingerprint, ...values };
  return {
    publicUrl,
    unix: unixInstallCommand({ ...input, scriptSha256: content.manifest.install_sha256.sh }),
    unixService: unixInstallCommand(
      { ...input, scriptSha256: content.manifest.install_sha256.sh },
      { service: true },
    ),
    windows: windowsInstallCommand({ ...input, scriptSha256: content.manifest.install_sha256.ps1 }),
    edgeFingerprint,
    installSha256: content.manifest.install_sha256,
  };
}

/** Lines for the terminal (no trailing newlines). */
export function formatInstallInstructions(lines: InstallLines): string[] {
  return [
    `Install and start the node on its host (served by this edge's bootstrap server, ${lines.publicUrl}):`,
    '  Linux / macOS (bash):',
    `    ${lines.unix}`,
    '  Windows (paste into PowerShell):',
    `    ${lines.windows}`,
    'To install it as a service instead of running it here — Linux/macOS (as root on Linux it runs as the',
    'unprivileged iop-node user):',
    `    ${lines.unixService}`,
    '  Windows: add -Service at the end of the PowerShell line.',
    'These lines contain the token: paste them only on the node host, do not store them in shared files.',
    lines.edgeFingerprint
      ? `They pin install.sh (sha256 ${lines.installSha256.sh}), install.ps1 (sha256 ${lines.installSha256.ps1}), ` +
        `the node artifacts and the edge's key (${lines.edgeFingerprint}); after 'bootstrap pack' or a new ` +
        'artifact, register again for fresh lines.'
      : 'WARNING: edge.tls is off: the token and every run cross the network unencrypted and the node cannot ' +
        "tell this edge from an impostor. Run 'iop-edge config init' on a new host, or set edge.tls.",
  ];
}
