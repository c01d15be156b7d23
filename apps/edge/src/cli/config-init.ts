// `iop-edge config init`: writes a starter edge.yaml (default ./edge.yaml) whose bootstrap.public_url uses this
// host's first non-loopback address, so `node register` prints URLs remote nodes can reach. Never replaces an
// existing file unless --overwrite-config is given. It also makes the edge's TLS identity (ECDSA P-256 key, mode
// 0600, and a self-signed certificate for the public host) in the data dir and enables edge.tls, so the node link
// is encrypted and pinned from the first `node register`; --no-tls writes the old plaintext template. The file
// gets a fresh admin token (refresh.admin_token), so it is written mode 0600: the admin API and the dashboard refuse
// callers without that token even on loopback, and the CLI commands run next to the file read it from there.
import { access, chmod, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CONFIG_ENV_VAR,
  DEFAULTS,
  formatIssue,
  isConfigError,
  parseConfigText,
  renderConfigTemplate,
} from '@iop/config';
import { certificateHosts, EDGE_CERT_FILE, EDGE_KEY_FILE, ensureEdgeIdentity } from '../tls/edge-identity.js';
import {
  booleanFlag,
  parseFlags,
  stringFlag,
  UsageError,
  writeLine,
  type CliCommand,
  type CliIo,
} from './command.js';
import { configFlag } from './config-source.js';
import { generateAdminToken } from './admin-token.js';

type NetworkInterfaces = ReturnType<typeof os.networkInterfaces>;

export interface ConfigInitDeps {
  networkInterfaces(): NetworkInterfaces;
  /** Random bytes for the admin token; default node:crypto randomBytes. */
  randomBytes?: (size: number) => Buffer;
}

/** First non-internal, non-link-local address: IPv4 preferred, IPv6 bracketed for use in a URL. */
export function pickPublicHost(interfaces: NetworkInterfaces): string | undefined {
  const addresses = Object.values(interfaces).flatMap((list) => list ?? []);
  const usable = addresses.filter((entry) => !entry.internal);
  const v4 = usable.find((entry) => entry.family === 'IPv4' && !entry.address.startsWith('169.254.'));
  if (v4) return v4.address;
  const v6 = usable.find(
    (entry) => entry.family === 'IPv6' && !entry.address.toLowerCase().startsWith('fe80'),
  );
  return v6 ? `[${v6.address}]` : undefined;
}

/**
 * The file init writes: --path, else the root --config (as for every other command), else IOP_EDGE_CONFIG, else
 * ./edge.yaml — the file `serve` reads with the same flag or environment. (Unlike serve, init never falls back to
 * an edge.yaml next to the executable or in a repo checkout: it creates a new file where the operator is.)
 */
function initTarget(pathFlag: string | undefined, configFlagValue: string | undefined, io: CliIo): string {
  if (pathFlag !== undefined && configFlagValue !== undefined && pathFlag !== configFlagValue)
    throw new UsageError(
      `--path '${pathFlag}' and --config '${configFlagValue}' name different files; pass one`,
    );
  const chosen = pathFlag ?? configFlagValue ?? (io.env[CONFIG_ENV_VAR] || undefined) ?? 'edge.yaml';
  if (chosen === '') throw new UsageError('the config path is empty');
  return path.resolve(io.cwd, chosen);
}

export function createConfigInitCommand(deps: ConfigInitDeps): CliCommand {
  return {
    path: ['config', 'init'],
    summary:
      'Write a starter edge.yaml with this host as bootstrap.public_url (never overwrites by default).',
    usage: 'config init [--path P | --config P] [--public-url URL] [--overwrite-config] [--no-tls]',
    async run(argv, io) {
      const flags = parseFlags(argv, {
        path: { type: 'string' },
        ...configFlag,
        'public-url': { type: 'string' },
        'overwrite-config': { type: 'boolean' },
        'no-tls': { type: 'boolean' },
      });
      const target = initTarget(stringFlag(flags, 'path'), stringFlag(flags, 'config'), io);
      let publicUrl = stringFlag(flags, 'public-url');
      if (publicUrl === undefined) {
        const host = pickPublicHost(deps.networkInterfaces());
        if (!host)
          writeLine(io.stderr, 'warning: no non-loopback address found; using 127.0.0.1 (pass --public-url)');
        publicUrl = `http://${host ?? '127.0.0.1'}:${bootstrapPort()}`;
      }
      const withTls = !booleanFlag(flags, 'no-tls');
      const dataDir = DEFAULTS.data_dir;
      const tlsFiles = withTls
        ? {
            certFile: path.posix.join(dataDir, EDGE_CERT_FILE),
            keyFile: path.posix.join(dataDir, EDGE_KEY_FILE),
          }
        : undefined;
      let text: string;
      try {
        text = renderConfigTemplate({
          publicUrl,
          dataDir,
          ...(tlsFiles ? { tls: tlsFiles } : {}),
          adminToken: generateAdminToken(deps.randomBytes),
        });
      } catch (error) {
        if (isConfigError(error)) throw new UsageError(error.message);
        throw error;
      }
      // The template must always pass the same checks as a hand-written file.
      const check = parseConfigText(text, target);
      if (!check.ok) {
        for (const issue of check.issues) writeLine(io.stderr, formatIssue(issue));
        throw new Error('generated template failed validation');
      }
      const overwrite = booleanFlag(flags, 'overwrite-config');
      if (!overwrite && (await exists(target))) {
        writeLine(io.stderr, `${target} already exists; pass --overwrite-config to replace it`);
        return 1;
      }
      let fingerprint: string | undefined;
      if (withTls && check.config.edge.tls.enabled) {
        // Kept when already there: a re-init must not invalidate the fingerprint nodes pinned.
        const identity = await ensureEdgeIdentity({
          dir: path.resolve(path.dirname(target), dataDir),
          commonName: `iop-edge ${check.config.edge.id}`,
          hosts: certificateHosts(publicUrl, check.config.edge.listen),
        });
        fingerprint = identity.fingerprint;
        writeLine(
          io.stdout,
          `${identity.created ? 'created' : 'kept'} the edge's TLS key ${identity.keyFile} (mode 0600) and certificate ${identity.certFile}`,
        );
      }
      try {
        // 0600: the file holds the admin token. An overwritten file keeps its old mode on open, so chmod too.
        await writeFile(target, text, { encoding: 'utf8', flag: overwrite ? 'w' : 'wx', mode: 0o600 });
        await chmod(target, 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
          writeLine(io.stderr, `${target} already exists; pass --overwrite-config to replace it`);
          return 1;
        }
        throw error;
      }
      writeLine(io.stdout, `wrote ${target} (mode 0600; bootstrap.public_url: ${publicUrl})`);
      writeLine(
        io.stdout,
        'the admin API and the dashboard require refresh.admin_token from this file; nodes list, usage, config refresh and node adopt read it from here',
      );
      if (fingerprint) writeLine(io.stdout, `edge fingerprint (nodes pin it): ${fingerprint}`);
      else
        writeLine(
          io.stderr,
          'warning: edge.tls is off: node tokens and runs will cross the network unencrypted',
        );
      return 0;
    },
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

function bootstrapPort(): string {
  return DEFAULTS.bootstrap_listen.slice(DEFAULTS.bootstrap_listen.lastIndexOf(':') + 1);
}

export const configInitCommand = createConfigInitCommand({ networkInterfaces: () => os.networkInterfaces() });
