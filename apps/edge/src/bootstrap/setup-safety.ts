// The refusals `iop-edge setup` makes before it plans anything: paths must be absolute and plain (no spaces,
// quotes or backslashes: they go into the unit), system directories are never taken over as config or data dir,
// nothing the service needs may sit under a home directory (the unit hides them: ProtectHome=yes), and the
// binary the unit starts must be root-owned and not writable by others.
import path from 'node:path';
import { BootstrapError } from './errors.js';

/** The paths setup installs to (the unit names all three). */
export interface SetupPaths {
  binary: string;
  configPath: string;
  dataDir: string;
}

/** What the refusals ask of the host (the setup executor). */
interface HostProbe {
  exists(file: string): boolean;
}

/** Refuses options setup must not act on (typed `invalid_value` errors naming the flag). */
export function refuseUnsafePaths(options: SetupPaths, host: HostProbe): void {
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
  refuseSystemDirectory('--config (its directory)', path.dirname(options.configPath), host);
  refuseSystemDirectory('--data-dir', options.dataDir, host);
  refuseHiddenPath('--data-dir', options.dataDir);
  refuseHiddenPath('--binary', options.binary);
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

function refuseSystemDirectory(flag: string, dir: string, host: HostProbe): void {
  const normalized = path.resolve(dir);
  // Also any existing top-level directory (/data, /nix, ...): those belong to the host, not to IOP.
  const topLevel = path.dirname(normalized) === '/' && host.exists(normalized);
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

/** A binary a normal user can replace would run their code as the service. */
export function refuseWritableBinary(file: string, info: { uid: number; mode: number }): void {
  if (info.uid !== 0 || (info.mode & 0o022) !== 0) {
    throw new BootstrapError(
      'invalid_value',
      `${file} is ${info.uid !== 0 ? `owned by uid ${info.uid}` : 'writable by group or others'}: a service ` +
        'binary a normal user can replace runs their code as the service; install it root-owned, mode 0755',
    );
  }
}
