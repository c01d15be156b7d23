// `iop-edge bootstrap pack [--config P]`: hashes the node artifacts in bootstrap.artifact_dir and writes
// SHA256SUMS, manifest.json, install.sh and install.ps1 there for the current config (public URL, edge address),
// e.g. after `make pack-node-target`, a config change, or to host the bootstrap files on another web server.
// Files are replaced atomically; a changed checksum of an already listed artifact is reported.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHECKSUMS_FILE,
  formatChecksums,
  readArtifactSet,
  scanArtifactDir,
} from '../bootstrap/artifact-set.js';
import { renderBootstrapContent } from '../bootstrap/bootstrap-content.js';
import { readEdgeFingerprint } from '../tls/edge-identity.js';
import type { NetworkInterfaces } from '../http/host-guard.js';
import { EDGE_VERSION } from '../version.js';
import { parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { configFlag, loadValidConfig } from './config-source.js';

export interface BootstrapPackDeps {
  interfaces: NetworkInterfaces;
  edgeVersion: string;
}

function writeAtomic(file: string, content: string, mode: number): void {
  const temp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(temp, content, { mode });
  fs.renameSync(temp, file);
}

export function createBootstrapPackCommand(deps: BootstrapPackDeps): CliCommand {
  return {
    path: ['bootstrap', 'pack'],
    summary:
      'Rewrite SHA256SUMS, manifest.json, install.sh and install.ps1 in bootstrap.artifact_dir for this config.',
    usage: 'bootstrap pack [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, configFlag);
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const loaded = await loadValidConfig(stringFlag(flags, 'config'), io);
      if (!loaded) return 1;
      const config = loaded.config;
      const dir = config.bootstrap.artifact_dir;
      if (!fs.existsSync(dir)) {
        writeLine(io.stderr, `bootstrap.artifact_dir ${dir} does not exist (from ${loaded.path})`);
        return 1;
      }
      let previous = new Map<string, string>();
      try {
        previous = new Map(
          readArtifactSet(dir).artifacts.map((artifact) => [artifact.file, artifact.sha256]),
        );
      } catch (error) {
        writeLine(
          io.stderr,
          `replacing unreadable ${CHECKSUMS_FILE}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const set = await scanArtifactDir(dir);
      if (set.artifacts.length === 0)
        writeLine(io.stderr, `warning: no iop-node-<version>-<os>-<arch>.tar.gz in ${dir}`);
      const content = renderBootstrapContent(config, set, {
        interfaces: deps.interfaces,
        fallbackVersion: deps.edgeVersion,
        edgeFingerprint: await readEdgeFingerprint(config),
      });
      writeAtomic(path.join(dir, CHECKSUMS_FILE), formatChecksums(set.artifacts), 0o644);
      writeAtomic(path.join(dir, 'manifest.json'), `${JSON.stringify(content.manifest, null, 2)}\n`, 0o644);
      writeAtomic(path.join(dir, 'install.sh'), content.installSh, 0o755);
      writeAtomic(path.join(dir, 'install.ps1'), content.installPs1, 0o644);
      for (const artifact of set.artifacts) {
        const before = previous.get(artifact.file);
        const note =
          before === undefined ? 'new' : before === artifact.sha256 ? 'unchanged' : 'CHECKSUM CHANGED';
        writeLine(
          io.stdout,
          `  ${artifact.os}-${artifact.arch}`.padEnd(17) +
            `${artifact.file}  ${(artifact.size / 1024 / 1024).toFixed(1)} MB  ${artifact.sha256.slice(0, 16)}…  ${note}`,
        );
      }
      writeLine(
        io.stdout,
        `wrote ${CHECKSUMS_FILE}, manifest.json, install.sh, install.ps1 in ${dir} ` +
          `(public URL ${content.manifest.public_url}, edge ${content.manifest.edge_address})`,
      );
      return 0;
    },
  };
}

export const bootstrapPackCommand = createBootstrapPackCommand({
  interfaces: () => os.networkInterfaces(),
  edgeVersion: EDGE_VERSION,
});
