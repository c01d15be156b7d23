// Fetches npm package tarballs once with `npm pack <name>@<version>` into a cache folder and unpacks them on
// demand. A repeated build finds the tarball and skips the download; a partial download never lands under the
// final name (npm pack writes into a temporary folder first).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from './progress.mjs';

/** File name npm pack gives `@scope/name@version`. */
export function packedName(name, version) {
  return `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
}

/** Path of the cached tarball, downloading it when missing; `cached` says whether it was already there. */
export async function fetchPackage(cacheDir, name, version) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const file = path.join(cacheDir, packedName(name, version));
  if (fs.existsSync(file)) return { file, cached: true };
  const temp = fs.mkdtempSync(path.join(cacheDir, '.pack-'));
  try {
    await run('npm', ['pack', '--silent', `${name}@${version}`], { cwd: temp });
    const produced = path.join(temp, packedName(name, version));
    if (!fs.existsSync(produced))
      throw new Error(`npm pack ${name}@${version} produced no ${packedName(name, version)}`);
    fs.renameSync(produced, file);
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
  return { file, cached: false };
}

/** Extracts the listed members of an npm tarball (paths under `package/`) into `destination`. */
export async function extractPackage(tarball, destination, members) {
  fs.mkdirSync(destination, { recursive: true });
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'iop-release-unpack-'));
  try {
    const selected = members ? members.map((member) => `package/${member}`) : [];
    await run('tar', ['-xzf', tarball, '-C', temp, ...selected]);
    const root = path.join(temp, 'package');
    fs.cpSync(root, destination, { recursive: true });
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
}
