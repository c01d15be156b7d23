#!/usr/bin/env node
// Windows e2e helper: install.ps1's pinned download step, checked without PowerShell. From the Windows line that
// `iop-edge node register --json` printed (install_windows), it takes what PowerShell would run with: the
// install.ps1 URL and the SHA-256 pinned for it, and -ArtifactUrl. It downloads install.ps1 from the edge's
// bootstrap server and checks the pin (as the line's Get-FileHash does), reads the script's version and artifact
// checksum list (the values Start-IopNode uses), derives the artifact name exactly as Get-IopArtifactName does,
// downloads `<ArtifactUrl>/<name>` as Invoke-IopDownload would, and checks its SHA-256 against the script's list
// (Test-IopChecksum) and against the artifact this build produced. A tampered byte anywhere fails it.
// Usage: check-install-ps1.mjs <register.json> <local artifact .tar.gz> <os-arch, e.g. windows-amd64>
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [registerFile, localArtifact, target] = process.argv.slice(2);
if (!target) {
  process.stderr.write('usage: check-install-ps1.mjs <register.json> <local artifact> <os-arch>\n');
  process.exit(2);
}
const fail = (message) => {
  process.stderr.write(`check-install-ps1: ${message}\n`);
  process.exit(1);
};
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
/** The value of a single-quoted PowerShell literal ('' is a quote). */
const psLiteral = (quoted) => quoted.replace(/''/g, "'");

const line = JSON.parse(readFileSync(registerFile, 'utf8')).install_windows;
if (typeof line !== 'string' || line === '') fail('register.json has no install_windows line');
const scriptUrl = /DownloadData\('((?:[^']|'')+)'\)/.exec(line)?.[1];
const pinned = /\.Hash -ne '([0-9a-fA-F]{64})'/.exec(line)?.[1];
const artifactUrl = /-ArtifactUrl '((?:[^']|'')+)'/.exec(line)?.[1];
if (!scriptUrl || !pinned || !artifactUrl) fail(`cannot read the URL, pin and -ArtifactUrl from: ${line}`);

async function download(url) {
  const response = await fetch(url);
  if (!response.ok) fail(`GET ${url}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

const script = await download(psLiteral(scriptUrl));
// Get-FileHash prints upper-case hex; PowerShell's -ne compares case-insensitively.
if (sha256(script) !== pinned.toLowerCase()) {
  fail(`install.ps1 has SHA-256 ${sha256(script)}, the line pins ${pinned}`);
}
console.log(
  `    | install.ps1 ${script.length} bytes, SHA-256 matches the pin in the line (${pinned.slice(0, 16)}…)`,
);

const text = script.toString('utf8');
const version = /^\$IopVersion = '((?:[^']|'')*)'/m.exec(text)?.[1];
const sums = /^\$IopArtifactSha256s = '((?:[^']|'')*)'/m.exec(text)?.[1];
if (version === undefined || sums === undefined) fail('install.ps1 has no $IopVersion / $IopArtifactSha256s');
// Get-IopArtifactName, as the script defines it.
if (!text.includes('return "iop-node-$IopVersion-windows-$Arch.tar.gz"')) {
  fail('install.ps1 names artifacts differently than this check assumes (Get-IopArtifactName changed)');
}
const [os, arch] = target.split('-');
if (os !== 'windows') fail(`${target}: install.ps1 installs windows artifacts only`);
const name = `iop-node-${psLiteral(version)}-windows-${arch}.tar.gz`;
// Get-IopExpectedHash: '<hex>  <name>' (or '*<name>') lines.
const expected = psLiteral(sums)
  .split(/\r?\n/)
  .map((entry) => entry.trim().split(/\s+/, 2))
  .filter((parts) => parts.length === 2 && (parts[1] === name || parts[1] === `*${name}`))
  .map((parts) => parts[0].toLowerCase());
if (expected.length !== 1) fail(`install.ps1 lists ${expected.length} checksums for ${name}`);

const base = psLiteral(artifactUrl).replace(/\/+$/, '');
const archive = await download(`${base}/${name}`);
const fetched = sha256(archive);
if (fetched !== expected[0])
  fail(`${name} from ${base} has SHA-256 ${fetched}, install.ps1 expects ${expected[0]}`);
const built = sha256(readFileSync(localArtifact));
if (fetched !== built)
  fail(`${name} served by the edge (${fetched}) is not the one this build made (${built})`);
console.log(
  `    | ${name} (${(archive.length / 2 ** 20).toFixed(1)} MiB) from ${base}: SHA-256 ${fetched.slice(0, 16)}… ` +
    'matches install.ps1 and the build',
);
