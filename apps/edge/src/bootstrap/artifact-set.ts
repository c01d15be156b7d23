// The node artifacts an edge serves: read from `<artifact_dir>/SHA256SUMS` (the build writes it; `bootstrap pack`
// rewrites it), each entry checked against the naming rule and the file on disk. Only listed files are ever
// served, so the bootstrap server cannot be walked outside this set. Also hashes a folder to (re)write the list.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BootstrapError } from './errors.js';

export const CHECKSUMS_FILE = 'SHA256SUMS';

export type ArtifactOs = 'linux' | 'darwin' | 'windows';
export type ArtifactArch = 'amd64' | 'arm64';

export interface NodeArtifact {
  file: string;
  version: string;
  os: ArtifactOs;
  arch: ArtifactArch;
  sha256: string;
  size: number;
}

export interface ArtifactSet {
  dir: string;
  /** The version every artifact carries; undefined when there is none. */
  version: string | undefined;
  artifacts: NodeArtifact[];
}

const ARTIFACT_NAME =
  /^iop-node-([0-9A-Za-z][0-9A-Za-z.+_-]*)-(linux|darwin|windows)-(amd64|arm64)\.tar\.gz$/;

/** Version, os and arch of an artifact file name, or undefined when it is not one. */
export function parseArtifactName(file: string): Pick<NodeArtifact, 'version' | 'os' | 'arch'> | undefined {
  const match = ARTIFACT_NAME.exec(file);
  if (!match) return undefined;
  return { version: match[1] ?? '', os: match[2] as ArtifactOs, arch: match[3] as ArtifactArch };
}

/** Parses SHA256SUMS text (`<hex>  <name>` or `<hex> *<name>` lines); throws on anything else. */
export function parseChecksums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '') return;
    const match = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line);
    if (!match?.[1] || !match[2]) {
      throw new BootstrapError(
        'invalid_checksums',
        `${CHECKSUMS_FILE} line ${index + 1} is not '<sha256>  <file>'`,
      );
    }
    sums.set(match[2], match[1].toLowerCase());
  });
  return sums;
}

export function formatChecksums(artifacts: readonly NodeArtifact[]): string {
  return artifacts.map((artifact) => `${artifact.sha256}  ${artifact.file}\n`).join('');
}

function versionOf(artifacts: readonly NodeArtifact[]): string | undefined {
  const versions = [...new Set(artifacts.map((artifact) => artifact.version))];
  if (versions.length > 1) {
    throw new BootstrapError(
      'mixed_versions',
      `artifacts of several versions (${versions.join(', ')}); keep one`,
    );
  }
  return versions[0];
}

function sortArtifacts(artifacts: NodeArtifact[]): NodeArtifact[] {
  return artifacts.sort((a, b) => a.file.localeCompare(b.file));
}

/** Reads the served set from SHA256SUMS (empty when the file is absent); every listed file must exist. */
export function readArtifactSet(dir: string): ArtifactSet {
  const checksumsPath = path.join(dir, CHECKSUMS_FILE);
  let text: string;
  try {
    text = fs.readFileSync(checksumsPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { dir, version: undefined, artifacts: [] };
    throw error;
  }
  const artifacts: NodeArtifact[] = [];
  for (const [file, sha256] of parseChecksums(text)) {
    const parsed = parseArtifactName(file);
    if (!parsed) {
      throw new BootstrapError(
        'invalid_checksums',
        `${CHECKSUMS_FILE} lists '${file}', which is not a node artifact name`,
      );
    }
    let size: number;
    try {
      size = fs.statSync(path.join(dir, file)).size;
    } catch (error) {
      throw new BootstrapError(
        'artifact_missing',
        `${CHECKSUMS_FILE} lists ${file}, which is not in ${dir}`,
        {
          cause: error,
        },
      );
    }
    artifacts.push({ file, ...parsed, sha256, size });
  }
  return { dir, version: versionOf(artifacts), artifacts: sortArtifacts(artifacts) };
}

export async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Hashes every artifact file in the folder (what `bootstrap pack` writes to SHA256SUMS). */
export async function scanArtifactDir(dir: string): Promise<ArtifactSet> {
  const artifacts: NodeArtifact[] = [];
  for (const file of fs.readdirSync(dir)) {
    const parsed = parseArtifactName(file);
    if (!parsed) continue;
    const full = path.join(dir, file);
    const stat = fs.statSync(full);
    if (!stat.isFile()) continue;
    artifacts.push({ file, ...parsed, sha256: await sha256File(full), size: stat.size });
  }
  return { dir, version: versionOf(artifacts), artifacts: sortArtifacts(artifacts) };
}
