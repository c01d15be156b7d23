// Launchers of a node artifact: they run the bundled agent with the Node runtime inside the artifact, so the
// host needs no Node.js. ExperimentalWarning is silenced because node:sqlite (the artifacts' run history)
// prints one at every start.
import fs from 'node:fs';
import path from 'node:path';

const NODE_FLAGS = '--disable-warning=ExperimentalWarning';

export function writeLaunchers(root, target) {
  const bin = path.join(root, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  if (target.os === 'windows') {
    fs.writeFileSync(
      path.join(bin, 'iop-node.cmd'),
      [
        '@echo off',
        'rem iop-node launcher: the agent bundle on the Node.js runtime shipped in this folder.',
        `"%~dp0..\\runtime\\node.exe" ${NODE_FLAGS} "%~dp0..\\lib\\iop-node.cjs" %*`,
        'exit /b %ERRORLEVEL%',
        '',
      ].join('\r\n'),
    );
    fs.writeFileSync(
      path.join(bin, 'iop-node.ps1'),
      [
        '# iop-node launcher: the agent bundle on the Node.js runtime shipped in this folder.',
        `& (Join-Path $PSScriptRoot '..\\runtime\\node.exe') ${NODE_FLAGS} (Join-Path $PSScriptRoot '..\\lib\\iop-node.cjs') @args`,
        'exit $LASTEXITCODE',
        '',
      ].join('\r\n'),
    );
    return;
  }
  const launcher = path.join(bin, 'iop-node');
  fs.writeFileSync(
    launcher,
    [
      '#!/bin/sh',
      '# iop-node launcher: the agent bundle on the Node.js runtime shipped in this folder (no Node.js on PATH needed).',
      '# Symlinks to this file are followed, so it may be linked from a bin directory on PATH.',
      'self="$0"',
      'while [ -h "$self" ]; do',
      '  link="$(readlink "$self")"',
      '  case "$link" in /*) self="$link" ;; *) self="$(dirname "$self")/$link" ;; esac',
      'done',
      'root="$(cd "$(dirname "$self")/.." && pwd -P)"',
      `exec "$root/runtime/node" ${NODE_FLAGS} "$root/lib/iop-node.cjs" "$@"`,
      '',
    ].join('\n'),
  );
  fs.chmodSync(launcher, 0o755);
}
