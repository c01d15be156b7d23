// `sudo iop-edge setup [--dry-run] [--enable] [--start] [--binary PATH] [--config /etc/iop/edge.yaml]
// [--overwrite-config] [--data-dir /var/lib/iop] [--artifact-dir DIR] [--public-url URL]`: prepares this host to
// run the edge as a systemd service (see bootstrap/edge-setup.ts for the plan and its safety rules): binary and
// artifacts under /usr/local/lib/iop-edge (root-owned), a TLS identity in the data dir for a new config.
// --dry-run prints every action and changes nothing; otherwise it must run as root and stops at the first
// failed action.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULTS, isConfigError, renderConfigTemplate } from '@iop/config';
import { fingerprintOfCertificate } from '@iop/wire';
import { DEFAULT_INSTALL_DIR, planSetup, type SetupExecutor } from '../bootstrap/edge-setup.js';
import { certificateHosts, EDGE_CERT_FILE, EDGE_KEY_FILE, ensureEdgeIdentity } from '../tls/edge-identity.js';
import { booleanFlag, parseFlags, stringFlag, UsageError, writeLine, type CliCommand } from './command.js';
import { pickPublicHost } from './config-init.js';
import { generateAdminToken } from './admin-token.js';

export interface SetupDeps {
  executor: SetupExecutor;
  /** Effective user id (root is 0). */
  uid(): number;
  networkInterfaces(): ReturnType<typeof os.networkInterfaces>;
  /** Random bytes for the new config's admin token; default node:crypto randomBytes. */
  randomBytes?: (size: number) => Buffer;
}

export const hostExecutor: SetupExecutor = {
  exists: (file) => fs.existsSync(file),
  stat: (file) => {
    try {
      const stat = fs.statSync(file);
      return { uid: stat.uid, mode: stat.mode & 0o7777, isDirectory: stat.isDirectory() };
    } catch {
      return undefined;
    }
  },
  listDir: (dir) => {
    try {
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => entry.name);
    } catch {
      return [];
    }
  },
  ensureIdentity: (dir, commonName, hosts) => ensureEdgeIdentity({ dir, commonName, hosts }),
  run: (command, args) =>
    new Promise((resolve) => {
      execFile(command, [...args], { timeout: 60_000 }, (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 127) : 0;
        resolve({ code, output: `${stdout}${stderr}${error && code === 127 ? error.message : ''}` });
      });
    }),
  mkdir: async (dir, mode) => {
    // chmod (umask-proof) only when this call created it: an existing directory keeps its mode.
    const created = await fs.promises.mkdir(dir, { recursive: true, mode });
    if (created !== undefined) await fs.promises.chmod(dir, mode);
  },
  writeFile: async (file, content, mode) => {
    const temp = `${file}.tmp-${process.pid}`;
    await fs.promises.writeFile(temp, content, { mode });
    await fs.promises.chmod(temp, mode);
    await fs.promises.rename(temp, file);
  },
  copyFile: async (from, to, mode) => {
    const temp = `${to}.tmp-${process.pid}`;
    await fs.promises.copyFile(from, temp);
    await fs.promises.chmod(temp, mode);
    await fs.promises.rename(temp, to);
  },
};

export function createSetupCommand(deps: SetupDeps): CliCommand {
  return {
    path: ['setup'],
    summary:
      'Install the edge as a hardened systemd service (iop user, data dir, config, unit); --dry-run shows the plan. ' +
      'Also: --overwrite-config, --data-dir D (/var/lib/iop), --artifact-dir D, --public-url URL.',
    usage: 'setup [--dry-run] [--enable] [--start] [--binary PATH] [--config P]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        'dry-run': { type: 'boolean' },
        enable: { type: 'boolean' },
        start: { type: 'boolean' },
        binary: { type: 'string' },
        config: { type: 'string', short: 'c' },
        'overwrite-config': { type: 'boolean' },
        'data-dir': { type: 'string' },
        'artifact-dir': { type: 'string' },
        'public-url': { type: 'string' },
      });
      if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
      const dryRun = booleanFlag(flags, 'dry-run');
      if (!dryRun && deps.uid() !== 0) {
        writeLine(
          io.stderr,
          'iop-edge setup changes system files: run it with sudo, or add --dry-run to see the plan',
        );
        return 1;
      }
      const currentExecutable = path.resolve(io.cwd, io.execPath);
      const resolve = (value: string | undefined, fallback: string) =>
        path.resolve(io.cwd, value ?? fallback);
      const binary = resolve(stringFlag(flags, 'binary'), path.join(DEFAULT_INSTALL_DIR, 'iop-edge'));
      const configPath = resolve(stringFlag(flags, 'config'), '/etc/iop/edge.yaml');
      const dataDir = resolve(stringFlag(flags, 'data-dir'), '/var/lib/iop');
      // The release's artifacts (next to the executable running setup) are copied to a root-owned folder,
      // unless --artifact-dir names where they are served from.
      const artifactSource = path.join(path.dirname(currentExecutable), 'artifacts');
      const artifactFlag = stringFlag(flags, 'artifact-dir');
      const artifactDir = resolve(artifactFlag, path.join(DEFAULT_INSTALL_DIR, 'artifacts'));
      const publicUrl =
        stringFlag(flags, 'public-url') ??
        `http://${pickPublicHost(deps.networkInterfaces()) ?? '127.0.0.1'}:${DEFAULTS.bootstrap_listen.split(':').pop() ?? '19091'}`;
      let configTemplate: string;
      // A new config gets its own admin token (the admin API and the dashboard then refuse callers without it,
      // on loopback too). The config is root:iop 0640, so only root and the service read it; a dry run never
      // shows the token.
      const adminToken = generateAdminToken(deps.randomBytes);
      const hideToken = (text: string): string => text.split(adminToken).join('<a new random admin token>');
      try {
        configTemplate = renderConfigTemplate({
          publicUrl,
          dataDir,
          adminToken,
          tls: { certFile: path.join(dataDir, EDGE_CERT_FILE), keyFile: path.join(dataDir, EDGE_KEY_FILE) },
        }).replace(
          /^(\s*artifact_dir:) .*$/m,
          (_line, key: string) => `${key} ${JSON.stringify(artifactDir)}`,
        );
      } catch (error) {
        if (isConfigError(error)) throw new UsageError(error.message);
        throw error;
      }
      const actions = await planSetup(
        {
          binary,
          currentExecutable,
          configPath,
          dataDir,
          configTemplate,
          artifactDir,
          artifactSource: artifactFlag === undefined ? artifactSource : artifactDir,
          certificateHosts: certificateHosts(publicUrl, DEFAULTS.edge_listen),
          overwriteConfig: booleanFlag(flags, 'overwrite-config'),
          enable: booleanFlag(flags, 'enable'),
          start: booleanFlag(flags, 'start'),
        },
        deps.executor,
      );
      for (const [index, action] of actions.entries()) {
        const label = `[${index + 1}/${actions.length}] ${action.description}`;
        if (dryRun) {
          writeLine(io.stdout, `would ${label}`);
          if (action.detail)
            for (const line of hideToken(action.detail).trimEnd().split('\n'))
              writeLine(io.stdout, `      | ${line}`);
          continue;
        }
        writeLine(io.stdout, label);
        await action.apply(deps.executor);
      }
      if (!dryRun) {
        try {
          const certificate = fs.readFileSync(path.join(dataDir, EDGE_CERT_FILE));
          writeLine(io.stdout, `edge fingerprint (nodes pin it): ${fingerprintOfCertificate(certificate)}`);
        } catch {
          // a kept config may point elsewhere; `iop-edge env` prints the fingerprint of the configured certificate
        }
      }
      writeLine(
        io.stdout,
        dryRun
          ? 'dry run: nothing was changed'
          : `done; status: systemctl status iop-edge; logs: journalctl -u iop-edge`,
      );
      return 0;
    },
  };
}

export const setupCommand = createSetupCommand({
  executor: hostExecutor,
  uid: () => process.getuid?.() ?? -1,
  networkInterfaces: () => os.networkInterfaces(),
});
