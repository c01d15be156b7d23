// `iop-edge setup`: the plan that makes this host run the edge as a systemd service — the `iop` system group
// and user, the data directory, /etc/iop with a config template (kept when present unless overwriting) and the
// edge's TLS identity, the binary and node artifacts at a root-owned path, and a hardened unit. Probes (does the
// user exist, is the file there) run on the injected executor in every mode; actions only run when not a dry
// run, so tests read the plan off the executor.
//
// Safety rules: setup creates only what is missing and never changes the owner or mode of a directory it did
// not create (no `chown -R`, no chmod of an existing directory); system directories (/, /etc, /var/lib, /home,
// ...) are refused as config or data dirs; the binary must be root-owned, not writable by others and outside
// the paths the unit hides (ProtectHome=yes), or the service would be broken or hijackable (setup-safety.ts).
// The plan is made in steps, in this order: service account, data directory, config (directory, file, TLS
// identity), binary, node artifacts, unit (edge-unit.ts) and systemctl.
import path from 'node:path';
import { EDGE_CERT_FILE, EDGE_KEY_FILE } from '../tls/edge-identity.js';
import { renderEdgeUnit, SERVICE_NAME, SERVICE_USER, UNIT_PATH } from './edge-unit.js';
import { BootstrapError } from './errors.js';
import { refuseUnsafePaths, refuseWritableBinary } from './setup-safety.js';

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

function keep(description: string): SetupAction {
  return { description, apply: () => Promise.resolve() };
}

/** The ordered actions for this host (probing it through the executor). */
export async function planSetup(options: SetupOptions, executor: SetupExecutor): Promise<SetupAction[]> {
  refuseUnsafePaths(options, executor);
  return [
    ...(await serviceAccountActions(options, executor)),
    ...dataDirectoryActions(options, executor),
    ...configActions(options, executor),
    ...binaryActions(options, executor),
    ...artifactActions(options, executor),
    ...unitActions(options),
  ];
}

/** The `iop` system group and user, each created when missing. */
async function serviceAccountActions(options: SetupOptions, executor: SetupExecutor): Promise<SetupAction[]> {
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
  return actions;
}

/** The data directory: kept as it is when present, else created and given to the service user. */
function dataDirectoryActions(options: SetupOptions, executor: SetupExecutor): SetupAction[] {
  if (executor.exists(options.dataDir)) {
    return [
      keep(
        `keep existing data directory ${options.dataDir} (owner and mode unchanged; ${SERVICE_USER} must be able to write it)`,
      ),
    ];
  }
  return [
    {
      description: `create data directory ${options.dataDir} (0750)`,
      apply: (e) => e.mkdir(options.dataDir, 0o750),
    },
    command(`give the new ${options.dataDir} to ${SERVICE_USER}`, 'chown', [
      `${SERVICE_USER}:${SERVICE_USER}`,
      options.dataDir,
    ]),
  ];
}

/**
 * The config directory (kept when present), the config file (kept unless overwriting) and, with a newly written
 * config, the edge's TLS identity (kept when both files exist: nodes pinned its fingerprint).
 */
function configActions(options: SetupOptions, executor: SetupExecutor): SetupAction[] {
  const actions: SetupAction[] = [];
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
    return actions;
  }
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
  actions.push(...identityActions(options, executor));
  return actions;
}

/** The edge's TLS key and certificate in the data directory, created when either is missing. */
function identityActions(options: SetupOptions, executor: SetupExecutor): SetupAction[] {
  const keyFile = path.join(options.dataDir, EDGE_KEY_FILE);
  const certFile = path.join(options.dataDir, EDGE_CERT_FILE);
  if (executor.exists(keyFile) && executor.exists(certFile)) {
    return [
      keep(`keep the edge's TLS key and certificate in ${options.dataDir} (nodes pinned their fingerprint)`),
    ];
  }
  return [
    {
      description: `create the edge's TLS key ${keyFile} (0600) and self-signed certificate ${certFile}`,
      async apply(e) {
        await e.ensureIdentity(options.dataDir, `iop-edge ${SERVICE_NAME}`, options.certificateHosts);
      },
    },
    command(`give the new key and certificate to ${SERVICE_USER}`, 'chown', [
      `${SERVICE_USER}:${SERVICE_USER}`,
      keyFile,
      certFile,
    ]),
  ];
}

/**
 * The binary the unit starts: installed from the running executable when missing; an existing one (or the
 * running executable itself) must be root-owned and not writable by others.
 */
function binaryActions(options: SetupOptions, executor: SetupExecutor): SetupAction[] {
  if (path.resolve(options.binary) === path.resolve(options.currentExecutable)) {
    const current = executor.stat(options.binary);
    if (current) refuseWritableBinary(options.binary, current);
    return [];
  }
  const installed = executor.stat(options.binary);
  if (installed) {
    refuseWritableBinary(options.binary, installed);
    return [keep(`keep existing binary ${options.binary}`)];
  }
  const actions: SetupAction[] = [];
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
  return actions;
}

/** The node artifacts copied into the served artifact directory when they come from elsewhere. */
function artifactActions(options: SetupOptions, executor: SetupExecutor): SetupAction[] {
  if (path.resolve(options.artifactSource) === path.resolve(options.artifactDir)) return [];
  const files = executor.listDir(options.artifactSource);
  if (files.length === 0) return [];
  const actions: SetupAction[] = [];
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
  return actions;
}

/** The systemd unit, a daemon reload, and enabling / starting the service when asked. */
function unitActions(options: SetupOptions): SetupAction[] {
  const unit = renderEdgeUnit(options);
  const actions: SetupAction[] = [
    {
      description: `write systemd unit ${UNIT_PATH} (0644)`,
      detail: unit,
      apply: (e) => e.writeFile(UNIT_PATH, unit, 0o644),
    },
    command('reload systemd', 'systemctl', ['daemon-reload']),
  ];
  if (options.enable)
    actions.push(command('enable at boot', 'systemctl', ['enable', `${SERVICE_NAME}.service`]));
  if (options.start) actions.push(command('start now', 'systemctl', ['restart', `${SERVICE_NAME}.service`]));
  return actions;
}
