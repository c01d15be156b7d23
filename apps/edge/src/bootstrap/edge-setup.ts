// `iop-edge setup`: the plan that makes this host run the edge as a systemd service — the `iop` system group
// and user, the data directory, /etc/iop with a config template (kept when present unless overwriting), the
// binary at its service path, and a hardened unit. Probes (does the user exist, is the file there) run on the
// injected executor in every mode; actions only run when not a dry run, so tests read the plan off the executor.
import path from 'node:path';
import { BootstrapError } from './errors.js';

export const SERVICE_NAME = 'iop-edge';
export const SERVICE_USER = 'iop';
export const UNIT_PATH = `/etc/systemd/system/${SERVICE_NAME}.service`;

/** Everything setup touches on the host; the real one runs commands and writes files, tests record calls. */
export interface SetupExecutor {
  exists(file: string): boolean;
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
  actions.push({
    description: `create data directory ${options.dataDir} (0750)`,
    apply: (e) => e.mkdir(options.dataDir, 0o750),
  });
  actions.push(
    command(`give ${options.dataDir} to ${SERVICE_USER}`, 'chown', [
      '-R',
      `${SERVICE_USER}:${SERVICE_USER}`,
      options.dataDir,
    ]),
  );

  const configDir = path.dirname(options.configPath);
  actions.push({
    description: `create config directory ${configDir} (0750)`,
    apply: (e) => e.mkdir(configDir, 0o750),
  });
  if (executor.exists(options.configPath) && !options.overwriteConfig) {
    actions.push({
      description: `keep existing config ${options.configPath} (--overwrite-config replaces it)`,
      apply: () => Promise.resolve(),
    });
  } else {
    actions.push({
      description: `${executor.exists(options.configPath) ? 'overwrite' : 'write'} config ${options.configPath} (0640)`,
      detail: options.configTemplate,
      apply: (e) => e.writeFile(options.configPath, options.configTemplate, 0o640),
    });
  }
  // root owns the config, the service group reads it (it may hold tokens and keys).
  actions.push(
    command(`let group ${SERVICE_USER} read the config`, 'chown', ['-R', `root:${SERVICE_USER}`, configDir]),
  );

  if (path.resolve(options.binary) !== path.resolve(options.currentExecutable)) {
    if (executor.exists(options.binary)) {
      actions.push({ description: `keep existing binary ${options.binary}`, apply: () => Promise.resolve() });
    } else {
      actions.push({
        description: `install ${options.currentExecutable} as ${options.binary} (0755)`,
        async apply(e) {
          await e.mkdir(path.dirname(options.binary), 0o755);
          await e.copyFile(options.currentExecutable, options.binary, 0o755);
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
