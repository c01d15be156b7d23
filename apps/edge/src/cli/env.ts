// `iop-edge env`: where this edge would read its config from and what it runs on — the first thing to check
// when a command picks up the wrong edge.yaml — and the edge's key fingerprint, which nodes pin
// (`iop-node run --edge-fingerprint`).
import { existsSync } from 'node:fs';
import { readEdgeFingerprint } from '../tls/edge-identity.js';
import { EDGE_VERSION } from '../version.js';
import { booleanFlag, parseFlags, stringFlag, writeLine, type CliCommand } from './command.js';
import { configFlag, loadCommandConfig } from './config-source.js';

export const envCommand: CliCommand = {
  path: ['env'],
  summary: 'Print the resolved config path and source, version, Node version, platform and data dir.',
  usage: 'env [--config P] [--json]',
  async run(argv, io) {
    const flags = parseFlags(argv, { ...configFlag, json: { type: 'boolean' } });
    const loaded = await loadCommandConfig(stringFlag(flags, 'config'), io);
    const report = {
      config_path: loaded.path,
      config_source: loaded.source,
      config_exists: existsSync(loaded.path),
      config_valid: loaded.result.ok,
      version: EDGE_VERSION,
      node_version: process.versions.node,
      platform: `${process.platform}/${process.arch}`,
      data_dir: loaded.result.ok ? loaded.result.config.edge.data_dir : null,
      edge_fingerprint: null as string | null,
      tls: loaded.result.ok ? loaded.result.config.edge.tls.enabled : null,
    };
    let fingerprintProblem: string | undefined;
    if (loaded.result.ok) {
      try {
        report.edge_fingerprint = (await readEdgeFingerprint(loaded.result.config)) ?? null;
      } catch (error) {
        fingerprintProblem = `cannot read edge.tls.cert_file: ${(error as Error).message}`;
      }
    }
    if (booleanFlag(flags, 'json')) {
      writeLine(io.stdout, JSON.stringify(report, null, 2));
      return 0;
    }
    const state = !report.config_exists
      ? 'missing'
      : loaded.result.ok
        ? 'valid'
        : `invalid: ${loaded.result.issues.length} problems, run 'iop-edge config check'`;
    writeLine(io.stdout, `config:   ${report.config_path} (${report.config_source}, ${state})`);
    writeLine(io.stdout, `version:  ${report.version}`);
    writeLine(io.stdout, `node:     ${report.node_version}`);
    writeLine(io.stdout, `platform: ${report.platform}`);
    writeLine(io.stdout, `data dir: ${report.data_dir ?? '(unknown: config not loadable)'}`);
    if (report.edge_fingerprint) writeLine(io.stdout, `edge fingerprint: ${report.edge_fingerprint}`);
    else if (fingerprintProblem) writeLine(io.stdout, `edge fingerprint: (${fingerprintProblem})`);
    else if (report.tls === false)
      writeLine(io.stdout, 'edge fingerprint: none: edge.tls is off, the node link is NOT encrypted');
    return 0;
  },
};
