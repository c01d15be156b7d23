// What the bootstrap server serves and `bootstrap pack` writes, derived from the config and the artifact set:
// install.sh, install.ps1 and manifest.json. One function so both always agree.
import type { EdgeConfig } from '@iop/config';
import { nodeFacingAddress } from './node-facing-address.js';
import type { ArtifactSet } from './artifact-set.js';
import { artifactUrl, bootstrapPublicUrl, type NetworkInterfaces } from './bootstrap-urls.js';
import { renderInstallPs1, renderInstallSh } from './install-scripts.js';

export interface BootstrapManifest {
  version: string;
  public_url: string;
  artifact_url: string;
  edge_address: string;
  install: { sh: string; ps1: string };
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
  options: { interfaces: NetworkInterfaces; fallbackVersion: string; boundPort?: number },
): BootstrapContent {
  const publicUrl = bootstrapPublicUrl(config, options.interfaces, options.boundPort);
  const artifacts = artifactUrl(publicUrl);
  const edgeAddress = nodeFacingAddress(config, options.interfaces);
  // With no artifacts yet the scripts still render (and fail clearly at the checksum list); they name the
  // edge's own version.
  const version = set.version ?? options.fallbackVersion;
  const values = { version, artifactUrl: artifacts, edgeAddress };
  return {
    installSh: renderInstallSh(values),
    installPs1: renderInstallPs1(values),
    manifest: {
      version,
      public_url: publicUrl,
      artifact_url: artifacts,
      edge_address: edgeAddress,
      install: { sh: `${publicUrl}/install.sh`, ps1: `${publicUrl}/install.ps1` },
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
