// `iop-edge setup`: the plan that makes this host run the edge as a systemd service — the `iop` system group
// and user, the data directory, /etc/iop with a config template (kept when present unless overwriting) and the
// edge's TLS identity, the binary and node artifacts at a root-owned path, and a hardened unit. Probes (does the
// user exist, is the file there) run on the injected executor in every mode; actions only run when not a dry
// run, so tests read the plan off the executor.
//
// Safety rules: setup creates only what is missing and never changes the owner or mode of a directory it did
// not create (no `chown -R`, no chmod of an existing directory); system directories (/, /etc, /var/lib, /home,
// ...) are refused as config or data dirs; the binary must be root-owned, not writable by others and outside
// the paths the unit hides (ProtectHome=yes), or the service would be broken or hijackable.
import path from 'node:path';
import { EDGE_CERT_FILE, EDGE_KEY_FILE } from '../tls/edge-identity.js';
import { BootstrapError } from './errors.js';

export const SERVICE_NAME = 'iop-edge';
export const SERVICE_USER = 'iop';
export const UNIT_PATH = `/etc/systemd/system/${SERVICE_NAME}.service`;
/** Root-owned home of the installed binary and the node artifacts it serves. */
export const DEFAULT_INSTALL_DIR = '/usr/local/lib/iop-edge';

/** What setup needs to know about an existing path. */
export interface PathInfo {
  uid: number;
  /** Permission bits (mode & 0o7777). */
  mode: number;
  isDirectory: boolean;
}

/** Everything setup touches on the host; the real one runs commands and writes files, tests record calls. */
export interface SetupExecutor {
  exists(file: string): boolean;
  /** Undefined when the path does not exist. */
  stat(file: string): PathInfo | undefined;
  /** File names in a directory ([] when it does not exist). */
  listDir(dir: string): string[];
  /** Creates the edge's TLS key and certificate in `dir` unless both exist; returns the fingerprint. */
  ensureIdentity(
    dir: string,
    commonName: string,
    hosts: readonly string[],
  ): Promise<{ fingerprint: string; created: boolean }>;
  /** Runs a program (no shell); resolves with its exit code and output. */
  run(command: string, args: readonly string[]): Promise<{ code: number; output: string }>;
  mkdir(dir: string, mode: number): Promise<void>;
  writeFile(file: string, content: string, mode: number): Promise<void>;
  copyFile(from: string, to: string, mode: number): Promise<void>;
}

export interface SetupOptions {
  /** The executable the unit starts (copied there from `currentExecutable` when missing). */
  binary: string;
  currentExecutable: string;
  configPath: string;
  dataDir: string;
  /** The config template written when the config file is missing (or overwritten). */
  configTemplate: string;
  /** Where the served node artifacts live (the config's bootstrap.artifact_dir). */
  artifactDir: string;
  /** Copied into artifactDir when it differs (the release's artifacts/ next to the executable). */
  artifactSource: string;
  /** Certificate names for a new TLS identity (public URL host, listen host). */
  certificateHosts: readonly string[];
  overwriteConfig: boolean;
  enable: boolean;
  start: boolean;
}

export interface SetupAction {
  /** One line for the operator ("create system group iop"). */
  description: string;
  /** Shown under the description in a dry run (a file's content). */
  detail?: string;
  apply(executor: SetupExecutor): Promise<void>;
}

function command(description: string, program: string, args: string[]): SetupAction {
  return {
    description: `${description}: ${[program, ...args].join(' ')}`,
    async apply(executor) {
      const result = await executor.run(program, args);
      if (result.code !== 0) {
        throw new BootstrapError(
          'setup_failed',
          `${program} ${args.join(' ')} exited ${result.code}: ${result.output.trim()}`,
        );
      }
    },
  };
}

/** Unit file: runs as iop, read-only system, writable data dir only, no privilege gain. */
export function renderEdgeUnit(options: Pick<SetupOptions, 'binary' | 'configPath' | 'dataDir'>): string {
  const quote = (value: string) =>
    `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%')}"`;
  return `[Unit]
Description=IOP edge (node transport, bootstrap server, APIs)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=${SERVICE_USER}
Group=${SERVICE_USER}
ExecStart=${quote(options.binary)} serve --config ${quote(options.configPath)}
Restart=on-failure
RestartSec=5
TimeoutStopSec=30
UMask=0027
LimitNOFILE=65536
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ReadWritePaths=${quote(options.dataDir)}
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictNamespaces=yes
RestrictRealtime=yes
LockPersonality=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
CapabilityBoundingSet=
AmbientCapabilities=
SystemCallArchitectures=native
# Node's JIT needs writable+executable memory, so MemoryDenyWriteExecute stays off.

[Install]
WantedBy=multi-user.target
`;
}

function keep(description: string): SetupAction {
  return { description, apply: () => Promise.resolve() };
}

/** Directories setup must never take over as its config or data dir (their owner and mode matter to the OS). */
export const SYSTEM_DIRECTORIES: readonly string[] = [
  '/',
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/home',
  '/lib',
  '/lib32',
  '/lib64',
  '/media',
  '/mnt',
  '/opt',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/snap',
  '/srv',
  '/sys',
  '/tmp',
  '/usr',
  '/usr/bin',
  '/usr/lib',
  '/usr/local',
  '/usr/local/bin',
  '/usr/local/lib',
  '/usr/local/sbin',
  '/usr/local/share',
  '/usr/sbin',
  '/usr/share',
  '/var',
  '/var/cache',
  '/var/lib',
  '/var/local',
  '/var/log',
  '/var/opt',
  '/var/run',
  '/var/spool',
  '/var/tmp',
  '/etc/systemd',
  '/etc/systemd/system',
];

function refuseSystemDirectory(flag: string, dir: string, executor: SetupExecutor): void {
  const normalized = path.resolve(dir);
  // Also any existing top-level directory (/data, /nix, ...): those belong to the host, not to IOP.
  const topLevel = path.dirname(normalized) === '/' && executor.exists(normalized);
  if (SYSTEM_DIRECTORIES.includes(normalized) || topLevel) {
    throw new BootstrapError(
      'invalid_value',
      `${flag} ${normalized} is a system directory: setup would take it over; use a directory of its own ` +
        '(e.g. /etc/iop/edge.yaml and /var/lib/iop)',
    );
  }
}

/** The unit runs with ProtectHome=yes: anything under these is invisible to the service. */
function refuseHiddenPath(flag: string, file: string): void {
  const normalized = path.resolve(file);
  if (
    ['/home', '/root', '/run/user'].some(
      (hidden) => normalized === hidden || normalized.startsWith(`${hidden}/`),
    )
  ) {
    throw new BootstrapError(
      'invalid_value',
      `${flag} ${normalized} is under a home directory, which the service cannot see (ProtectHome=yes); ` +
        'the default root-owned path is /usr/local/lib/iop-edge',
    );
  }
}

function refuseWritableBinary(file: string, info: PathInfo): void {
  if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new BootstrapError(
      'invalid_value',
      `${file} is ${info.uid !== 0 ? `owned by uid ${info.uid}` : 'writable by group or others'}: a service ` +
        'binary a normal user can replace runs their code as the service; install it root-owned, mode 0755',
    );
  }
}

/** The ordered actions for this host (probing it through the executor). */
export async function planSetup(options: SetupOptions, executor: SetupExecutor): Promise<SetupAction[]> {
  for (const [name, value] of [
    ['--binary', options.binary],
    ['--config', options.configPath],
    ['--data-dir', options.dataDir],
  ] as const) {
    if (!path.isAbsolute(value))
      throw new BootstrapError('invalid_value', `${name} must be an absolute path: ${value}`);
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\s"\\]/.test(value)) {
      throw new BootstrapError(
        'invalid_value',
        `${name} must not contain spaces, quotes or backslashes: ${value}`,
      );
    }
  }
  refuseSystemDirectory('--config (its directory)', path.dirname(options.configPath), executor);
  refuseSystemDirectory('--data-dir', options.dataDir, executor);
  refuseHiddenPath('--data-dir', options.dataDir);
  refuseHiddenPath('--binary', options.binary);
  const actions: SetupAction[] = [];
  const hasGroup = (await executor.run('getent', ['group', SERVICE_USER])).code === 0;
  const hasUser = (await executor.run('getent', ['passwd', SERVICE_USER])).code === 0;
  if (!hasGroup)
    actions.push(command(`create system group ${SERVICE_USER}`, 'groupadd', ['--system', SERVICE_USER]));
  if (!hasUser) {
    actions.push(
      command(`create system user ${SERVICE_USER}`, 'useradd', [
        '--system',
        '--gid',
        SERVICE_USER,
        '--home-dir',
        options.dataDir,
        '--no-create-home',
        '--shell',
        '/usr/sbin/nologin',
        SERVICE_USER,
      ]),
    );
  }
  if (executor.exists(options.dataDir)) {
    actions.push(
      keep(
        `keep existing data directory ${options.dataDir} (owner and mode unchanged; ${SERVICE_USER} must be able to write it)`,
      ),
    );
  } else {
    actions.push({
      description: `create data directory ${options.dataDir} (0750)`,
      apply: (e) => e.mkdir(options.dataDir, 0o750),
    });
    actions.push(
      command(`give the new ${options.dataDir} to ${SERVICE_USER}`, 'chown', [
        `${SERVICE_USER}:${SERVICE_USER}`,
        options.dataDir,
      ]),
    );
  }

  const configDir = path.dirname(options.configPath);
  if (executor.exists(configDir)) {
    actions.push(keep(`keep existing config directory ${configDir} (owner and mode unchanged)`));
  } else {
    actions.push({
      description: `create config directory ${configDir} (0750)`,
      apply: (e) => e.mkdir(configDir, 0o750),
    });
    actions.push(
      command(`let group ${SERVICE_USER} into the new ${configDir}`, 'chown', [
        `root:${SERVICE_USER}`,
        configDir,
      ]),
    );
  }
  if (executor.exists(options.configPath) && !options.overwriteConfig) {
    actions.push(keep(`keep existing config ${options.configPath} (--overwrite-config replaces it)`));
  } else {
    actions.push({
      description: `${executor.exists(options.configPath) ? 'overwrite' : 'write'} config ${options.configPath} (0640)`,
      detail: options.configTemplate,
      apply: (e) => e.writeFile(options.configPath, options.configTemplate, 0o640),
    });
    // root owns the config, the service group reads it (it may hold tokens and keys); the file only.
    actions.push(
      command(`let group ${SERVICE_USER} read the config`, 'chown', [
        `root:${SERVICE_USER}`,
        options.configPath,
      ]),
    );
    const keyFile = path.join(options.dataDir, EDGE_KEY_FILE);
    const certFile = path.join(options.dataDir, EDGE_CERT_FILE);
    if (executor.exists(keyFile) && executor.exists(certFile)) {
      actions.push(
        keep(
          `keep the edge's TLS key and certificate in ${options.dataDir} (nodes pinned their fingerprint)`,
        ),
      );
    } else {
      actions.push({
        description: `create the edge's TLS key ${keyFile} (0600) and self-signed certificate ${certFile}`,
        async apply(e) {
          await e.ensureIdentity(options.dataDir, `iop-edge ${SERVICE_NAME}`, options.certificateHosts);
        },
      });
      actions.push(
        command(`give the new key and certificate to ${SERVICE_USER}`, 'chown', [
          `${SERVICE_USER}:${SERVICE_USER}`,
          keyFile,
          certFile,
        ]),
      );
    }
  }

  if (path.resolve(options.binary) !== path.resolve(options.currentExecutable)) {
    const installed = executor.stat(options.binary);
    if (installed) {
      refuseWritableBinary(options.binary, installed);
      actions.push(keep(`keep existing binary ${options.binary}`));
    } else {
      const binaryDir = path.dirname(options.binary);
      if (!executor.exists(binaryDir)) {
        actions.push({
          description: `create ${binaryDir} (0755, root)`,
          apply: (e) => e.mkdir(binaryDir, 0o755),
        });
      }
      actions.push({
        description: `install ${options.currentExecutable} as ${options.binary} (0755, root)`,
        apply: (e) => e.copyFile(options.currentExecutable, options.binary, 0o755),
      });
    }
  } else {
    const current = executor.stat(options.binary);
    if (current) refuseWritableBinary(options.binary, current);
  }
  if (path.resolve(options.artifactSource) !== path.resolve(options.artifactDir)) {
    const files = executor.listDir(options.artifactSource);
    if (files.length > 0) {
      if (!executor.exists(options.artifactDir)) {
        actions.push({
          description: `create ${options.artifactDir} (0755, root)`,
          apply: (e) => e.mkdir(options.artifactDir, 0o755),
        });
      }
      actions.push({
        description: `copy ${files.length} node artifact files from ${options.artifactSource} to ${options.artifactDir} (0644, root)`,
        async apply(e) {
          for (const file of files)
            await e.copyFile(
              path.join(options.artifactSource, file),
              path.join(options.artifactDir, file),
              0o644,
            );
        },
      });
    }
  }
  const unit = renderEdgeUnit(options);
  actions.push({
    description: `write systemd unit ${UNIT_PATH} (0644)`,
    detail: unit,
    apply: (e) => e.writeFile(UNIT_PATH, unit, 0o644),
  });
  actions.push(command('reload systemd', 'systemctl', ['daemon-reload']));
  if (options.enable)
    actions.push(command('enable at boot', 'systemctl', ['enable', `${SERVICE_NAME}.service`]));
  if (options.start) actions.push(command('start now', 'systemctl', ['restart', `${SERVICE_NAME}.service`]));
  return actions;
}
