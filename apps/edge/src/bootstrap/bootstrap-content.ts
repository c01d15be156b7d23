// What the bootstrap server serves and `bootstrap pack` writes, derived from the config and the artifact set:
// install.sh, install.ps1 and manifest.json. One function so both always agree — and so `node register`, which
// pins the scripts' SHA-256 in its one-liners, computes exactly the bytes the server will send.
import { createHash } from 'node:crypto';
import type { EdgeConfig } from '@iop/config';
import { nodeFacingAddress } from './node-facing-address.js';
import type { ArtifactSet } from './artifact-set.js';
import type { NetworkInterfaces } from '../http/host-guard.js';
import { artifactUrl, bootstrapPublicUrl } from './bootstrap-urls.js';
import { renderInstallPs1, renderInstallSh } from './install-scripts.js';

export interface BootstrapManifest {
  version: string;
  public_url: string;
  artifact_url: string;
  edge_address: string;
  /** sha256:<hex> of the edge's TLS key; '' when the edge runs without TLS. */
  edge_fingerprint: string;
  install: { sh: string; ps1: string };
  /** SHA-256 (hex) of install.sh and install.ps1 as served: what the one-liners pin. */
  install_sha256: { sh: string; ps1: string };
  artifacts: Array<{ file: string; os: string; arch: string; sha256: string; size: number; url: string }>;
}

export interface BootstrapContent {
  installSh: string;
  installPs1: string;
  manifest: BootstrapManifest;
}

export function renderBootstrapContent(
  config: EdgeConfig,
  set: ArtifactSet,
  options: {
    interfaces: NetworkInterfaces;
    fallbackVersion: string;
    boundPort?: number;
    /** sha256:<hex> of the edge's TLS key; undefined when edge.tls is off. */
    edgeFingerprint: string | undefined;
  },
): BootstrapContent {
  const publicUrl = bootstrapPublicUrl(config, options.interfaces, options.boundPort);
  const artifacts = artifactUrl(publicUrl);
  const edgeAddress = nodeFacingAddress(config, options.interfaces);
  // With no artifacts yet the scripts still render (and fail clearly at the checksum list); they name the
  // edge's own version.
  const version = set.version ?? options.fallbackVersion;
  const edgeFingerprint = options.edgeFingerprint ?? '';
  const values = {
    version,
    artifactUrl: artifacts,
    edgeAddress,
    edgeFingerprint,
    artifacts: set.artifacts.map((artifact) => ({ file: artifact.file, sha256: artifact.sha256 })),
  };
  const installSh = renderInstallSh(values);
  const installPs1 = renderInstallPs1(values);
  return {
    installSh,
    installPs1,
    manifest: {
      version,
      public_url: publicUrl,
      artifact_url: artifacts,
      edge_address: edgeAddress,
      edge_fingerprint: edgeFingerprint,
      install: { sh: `${publicUrl}/install.sh`, ps1: `${publicUrl}/install.ps1` },
      install_sha256: { sh: sha256Text(installSh), ps1: sha256Text(installPs1) },
      artifacts: set.artifacts.map((artifact) => ({
        file: artifact.file,
        os: artifact.os,
        arch: artifact.arch,
        sha256: artifact.sha256,
        size: artifact.size,
        url: `${artifacts}/${artifact.file}`,
      })),
    },
  };
}

/** SHA-256 (hex) of the UTF-8 bytes the bootstrap server sends for `text`. */
export function sha256Text(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
