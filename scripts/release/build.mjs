#!/usr/bin/env node
// The release build (`make build`, `build-edge`, `pack-node-target`, `pack-edge`). Subcommands:
//   all [--targets "linux-amd64 ..."]   edge binary, the listed node artifacts (default all six), the edge archive
//   edge                                 dist/release/iop-edge: a Node 22 single-executable application
//   node-target <os-arch>                dist/release/artifacts/iop-node-<version>-<os>-<arch>.tar.gz
//   pack-edge                            dist/iop-edge-<version>-linux-<arch>.tar.gz from what is built
// Downloads (Node runtimes, node-pty prebuilt packages) go through `npm pack` into .cache/release and are reused.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleApp } from './bundle.mjs';
import { extractPackage, fetchPackage } from './npm-cache.mjs';
import { info, run, step } from './progress.mjs';
import { writeLaunchers } from './launchers.mjs';
import {
  artifactFileName,
  hostTarget,
  NODE_PTY_VERSION,
  NODE_RUNTIME_VERSION,
  parseTargets,
} from './targets.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const version =
  process.env.IOP_VERSION || JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')).version;
const releaseDir = path.join(repo, 'dist', 'release');
const artifactsDir = path.join(releaseDir, 'artifacts');
const workDir = path.join(releaseDir, 'work');
const runtimeCache = path.join(repo, '.cache', 'release', 'runtimes');
const packageCache = path.join(repo, '.cache', 'release', 'packages');
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Unpacks (once per build) the host's Node 22 runtime, used to generate SEA blobs and as the SEA base. */
async function hostNode() {
  const target = hostTarget();
  const dir = path.join(workDir, 'host-runtime');
  const binary = path.join(dir, 'bin', 'node');
  if (!fs.existsSync(binary)) {
    const { file } = await fetchPackage(runtimeCache, target.runtimePackage, NODE_RUNTIME_VERSION);
    await extractPackage(file, dir, ['bin/node']);
  }
  return binary;
}

async function buildEdge() {
  const host = hostTarget();
  let s = step(`edge: Node ${NODE_RUNTIME_VERSION} runtime for ${host.name}`);
  const { cached } = await fetchPackage(runtimeCache, host.runtimePackage, NODE_RUNTIME_VERSION);
  const node = await hostNode();
  s.done(cached ? 'cached' : 'downloaded');

  s = step('edge: bundle apps/edge (esbuild, CommonJS)');
  const seaDir = path.join(workDir, 'edge-sea');
  fs.rmSync(seaDir, { recursive: true, force: true });
  fs.mkdirSync(seaDir, { recursive: true });
  const bundle = path.join(seaDir, 'iop-edge.cjs');
  const { bytes } = await bundleApp({ repo, app: 'edge', outFile: bundle, version });
  s.done(`${mb(bytes)}`);

  s = step('edge: single-executable blob and injection (postject)');
  const blob = path.join(seaDir, 'sea-prep.blob');
  fs.writeFileSync(
    path.join(seaDir, 'sea-config.json'),
    JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }),
  );
  // The blob must come from the very Node version it is injected into (a foreign blob is silently ignored).
  await run(node, ['--experimental-sea-config', path.join(seaDir, 'sea-config.json')]);
  const output = path.join(releaseDir, 'iop-edge');
  const temp = `${output}.tmp`;
  fs.copyFileSync(node, temp);
  fs.chmodSync(temp, 0o755);
  await run(path.join(repo, '.tools/release/node_modules/.bin/postject'), [
    temp,
    'NODE_SEA_BLOB',
    blob,
    '--sentinel-fuse',
    SEA_FUSE,
  ]);
  const reported = (await run(temp, ['version'], { env: { ...process.env, IOP_EDGE_CONFIG: '' } })).trim();
  fs.renameSync(temp, output);
  s.done(`${path.relative(repo, output)} ${mb(fs.statSync(output).size)}; '${reported}'`);
}

async function buildNodeTarget(target, bundleFile) {
  const stage = path.join(workDir, 'node', target.name);
  const folder = `iop-node-${version}-${target.name}`;
  const root = path.join(stage, folder);
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(root, { recursive: true });

  let s = step(`node ${target.name}: Node ${NODE_RUNTIME_VERSION} runtime (${target.runtimePackage})`);
  const runtime = await fetchPackage(runtimeCache, target.runtimePackage, NODE_RUNTIME_VERSION);
  await extractPackage(runtime.file, path.join(stage, 'runtime-package'), [
    `bin/${target.exe}`,
    ...(target.os === 'windows' ? [] : ['LICENSE']),
  ]);
  fs.mkdirSync(path.join(root, 'runtime'), { recursive: true });
  fs.renameSync(
    path.join(stage, 'runtime-package', 'bin', target.exe),
    path.join(root, 'runtime', target.exe),
  );
  if (fs.existsSync(path.join(stage, 'runtime-package', 'LICENSE')))
    fs.renameSync(path.join(stage, 'runtime-package', 'LICENSE'), path.join(root, 'runtime', 'LICENSE'));
  s.done(runtime.cached ? 'cached' : 'downloaded');

  s = step(`node ${target.name}: @lydell/node-pty ${NODE_PTY_VERSION} + ${target.ptyPackage}`);
  let anyDownloaded = false;
  for (const name of ['@lydell/node-pty', target.ptyPackage]) {
    const fetched = await fetchPackage(packageCache, name, NODE_PTY_VERSION);
    anyDownloaded ||= !fetched.cached;
    await extractPackage(fetched.file, path.join(root, 'lib', 'node_modules', ...name.split('/')));
  }
  s.done(anyDownloaded ? 'downloaded' : 'cached');

  s = step(`node ${target.name}: agent bundle, launchers, archive`);
  fs.copyFileSync(bundleFile, path.join(root, 'lib', 'iop-node.cjs'));
  writeLaunchers(root, target);
  fs.writeFileSync(
    path.join(root, 'VERSION'),
    `iop-node ${version} ${target.name} (Node.js ${NODE_RUNTIME_VERSION}, run history: node:sqlite)\n`,
  );
  // The build host's own target is run once before packing: the launcher, runtime and bundle must start.
  let smoke = '';
  if (target.name === hostTarget().name) {
    smoke = `; '${(await run(path.join(root, 'bin', 'iop-node'), ['version'], { env: { PATH: '/usr/bin:/bin' } })).trim()}'`;
  }
  fs.mkdirSync(artifactsDir, { recursive: true });
  const archive = path.join(artifactsDir, artifactFileName(version, target));
  await run('tar', [
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '-czf',
    `${archive}.tmp`,
    '-C',
    stage,
    folder,
  ]);
  fs.renameSync(`${archive}.tmp`, archive);
  fs.rmSync(stage, { recursive: true, force: true });
  s.done(`${path.relative(repo, archive)} ${mb(fs.statSync(archive).size)}${smoke}`);
}

async function bundleNode() {
  const s = step('node: bundle apps/node (esbuild, CommonJS; node-pty stays a package beside it)');
  const bundle = path.join(workDir, 'iop-node.cjs');
  const { bytes } = await bundleApp({
    repo,
    app: 'node',
    outFile: bundle,
    version,
    external: ['@lydell/node-pty'],
  });
  s.done(mb(bytes));
  return bundle;
}

async function sha256(file) {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

async function packEdge() {
  const host = hostTarget();
  const edgeBinary = path.join(releaseDir, 'iop-edge');
  if (!fs.existsSync(edgeBinary)) throw new Error(`${edgeBinary} is missing: run 'make build-edge' first`);
  const artifacts = fs.existsSync(artifactsDir)
    ? fs
        .readdirSync(artifactsDir)
        .filter((name) => name.startsWith(`iop-node-${version}-`) && name.endsWith('.tar.gz'))
        .sort()
    : [];
  if (artifacts.length === 0)
    throw new Error(`no node artifacts of ${version} in ${artifactsDir}: run 'make pack-node-target' first`);

  let s = step(
    `edge archive: SHA256SUMS of ${artifacts.length} node artifact${artifacts.length === 1 ? '' : 's'}`,
  );
  const folder = `iop-edge-${version}-${host.name}`;
  const stage = path.join(workDir, 'edge-archive');
  const root = path.join(stage, folder);
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(path.join(root, 'artifacts'), { recursive: true });
  const sums = [];
  for (const name of artifacts) {
    // Hard links: the staging copy costs no disk space or time.
    fs.linkSync(path.join(artifactsDir, name), path.join(root, 'artifacts', name));
    sums.push(`${await sha256(path.join(artifactsDir, name))}  ${name}`);
  }
  fs.writeFileSync(path.join(root, 'artifacts', 'SHA256SUMS'), `${sums.join('\n')}\n`);
  s.done(artifacts.map((name) => name.replace(`iop-node-${version}-`, '').replace('.tar.gz', '')).join(' '));

  s = step('edge archive: iop-edge, edge.example.yaml, README.txt');
  fs.copyFileSync(edgeBinary, path.join(root, 'iop-edge'));
  fs.chmodSync(path.join(root, 'iop-edge'), 0o755);
  // The example comes from the binary itself, so it is exactly what `config init` writes (with a placeholder URL).
  await run(path.join(root, 'iop-edge'), [
    'config',
    'init',
    '--path',
    path.join(root, 'edge.example.yaml'),
    '--public-url',
    'http://edge.example:19091',
  ]);
  fs.copyFileSync(path.join(repo, 'scripts', 'release', 'edge-readme.txt'), path.join(root, 'README.txt'));
  s.done();

  s = step('edge archive: tar.gz');
  fs.mkdirSync(path.join(repo, 'dist'), { recursive: true });
  const archive = path.join(repo, 'dist', `${folder}.tar.gz`);
  await run('tar', [
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '-czf',
    `${archive}.tmp`,
    '-C',
    stage,
    folder,
  ]);
  fs.renameSync(`${archive}.tmp`, archive);
  fs.rmSync(stage, { recursive: true, force: true });
  s.done(`${path.relative(repo, archive)} ${mb(fs.statSync(archive).size)}`);
}

/** Removes artifacts of targets not asked for, so `make build NODE_TARGETS=...` ships exactly those. */
function keepOnly(targets) {
  if (!fs.existsSync(artifactsDir)) return;
  const wanted = new Set(targets.map((target) => artifactFileName(version, target)));
  for (const name of fs.readdirSync(artifactsDir)) {
    if (!wanted.has(name)) fs.rmSync(path.join(artifactsDir, name), { force: true });
  }
}

function mb(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function main(argv) {
  const [command, ...rest] = argv;
  const started = Date.now();
  switch (command) {
    case 'all': {
      const index = rest.indexOf('--targets');
      const targets = parseTargets(index >= 0 ? rest[index + 1] : process.env.NODE_TARGETS);
      info(
        `iop ${version}: edge for ${hostTarget().name}; node targets: ${targets.map((t) => t.name).join(' ')}`,
      );
      await buildEdge();
      const bundle = await bundleNode();
      keepOnly(targets);
      for (const target of targets) await buildNodeTarget(target, bundle);
      await packEdge();
      break;
    }
    case 'edge':
      await buildEdge();
      break;
    case 'node-target': {
      const [name] = rest;
      if (!name) throw new Error('usage: build.mjs node-target <os-arch> (NODE_TARGET=linux-amd64)');
      const [target] = parseTargets(name);
      await buildNodeTarget(target, await bundleNode());
      break;
    }
    case 'pack-edge':
      await packEdge();
      break;
    default:
      throw new Error('usage: build.mjs all [--targets "..."] | edge | node-target <os-arch> | pack-edge');
  }
  info(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`release build failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
