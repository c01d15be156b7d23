// What `iop-node run` was asked to do, read from its flags and environment and checked before anything is opened:
// the edges and node id, link timings, history size, the exit status for a replaced identity, the agent user, the
// image-fetch allow-list, the token (--token-file or IOP_NODE_TOKEN), TLS and pinning, the data dir and logging.
// Every mistake is a UsageError naming the flag.
import fs from 'node:fs';
import path from 'node:path';
import { parseEdgeFingerprint } from '@iop/wire';
import { allowListCheck } from '@iop/config';
import { createImageFetcher, type ImageFetcher } from '../adapters/http/image-fetch.js';
import { parseEdgeAddress, type DialOptions } from '../link/dial.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_RETRY_INTERVAL_MS, EXIT_CODE_REPLACED } from '../link/edge-link.js';
import { booleanFlag, integerFlag, parseFlags, stringFlag, UsageError, type CliIo } from './command.js';
import { resolveDataDir } from './data-dir.js';
import { readToken, refuseTokenFlag, type TokenSource } from './token.js';

export interface RunSettings {
  /** `--edge` as given (logged). */
  edgeFlag: string;
  /** Several edges of one cluster: each attempt tries them all, last good first. */
  edges: { host: string; port: number }[];
  nodeId: string;
  retryIntervalMs: number;
  maxRetries: number;
  registerTimeoutMs: number;
  retainRuns: number;
  replacedExitCode: number;
  agentUser: string | undefined;
  fetchImage: ImageFetcher | undefined;
  token: TokenSource;
  /** undefined: a plain, unauthenticated link. */
  tls: DialOptions['tls'];
  dataDir: string;
  logLevel: string;
  logFormat: string;
}

/** The settings of one `run`, or a UsageError for the first flag that is wrong. */
export function readRunSettings(argv: string[], io: CliIo): RunSettings {
  refuseTokenFlag(argv);
  const flags = parseFlags(argv, {
    edge: { type: 'string' },
    'node-id': { type: 'string' },
    'token-file': { type: 'string' },
    'data-dir': { type: 'string' },
    'retry-interval-ms': { type: 'string' },
    'max-retries': { type: 'string' },
    'register-timeout-ms': { type: 'string' },
    tls: { type: 'boolean' },
    'tls-ca': { type: 'string' },
    'tls-servername': { type: 'string' },
    'edge-fingerprint': { type: 'string' },
    'history-retain': { type: 'string' },
    // Exit status when another process took this node's identity (default 3). launchd cannot exempt one
    // status from KeepAlive, so its agent passes 0 here to avoid a replace loop.
    'replaced-exit-code': { type: 'string' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    // The local user every cli instance without its own run_as runs its agents as (a service install
    // passes iop-agent): they cannot read this node's token, identity key or history.
    'agent-user': { type: 'string' },
    // Networks the node may fetch remote images from besides public addresses (an internal image server).
    'image-fetch-allow': { type: 'string' },
  });
  if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
  const edgeFlag = stringFlag(flags, 'edge');
  if (!edgeFlag) throw new UsageError('--edge HOST:PORT is required');
  // Several edges of one cluster: `--edge a:19090,b:19090` (each attempt tries them all, last good first).
  let edges: { host: string; port: number }[];
  try {
    edges = edgeFlag.split(',').map((address) => parseEdgeAddress(address));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const nodeId = stringFlag(flags, 'node-id');
  if (!nodeId) throw new UsageError('--node-id ID is required');
  const retryIntervalMs = integerFlag(flags, 'retry-interval-ms', DEFAULT_RETRY_INTERVAL_MS, 1);
  const maxRetries = integerFlag(flags, 'max-retries', DEFAULT_MAX_RETRIES, 0);
  const registerTimeoutMs = integerFlag(flags, 'register-timeout-ms', 10_000, 1);
  const retainRuns = integerFlag(flags, 'history-retain', 1000, 1);
  const replacedExitCode = integerFlag(flags, 'replaced-exit-code', EXIT_CODE_REPLACED, 0);
  const agentUser = stringFlag(flags, 'agent-user');
  if (agentUser !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(agentUser))
    throw new UsageError(`--agent-user '${agentUser}' is not a valid user name`);
  const fetchImage = imageFetcher(stringFlag(flags, 'image-fetch-allow'));
  const token = readToken(stringFlag(flags, 'token-file'), io.env, io.cwd);
  const tls = tlsOptions(flags, io.cwd);
  const dataDir = resolveDataDir(stringFlag(flags, 'data-dir'), io.env, io.cwd);
  const logLevel = stringFlag(flags, 'log-level') ?? io.env['IOP_LOG_LEVEL'] ?? 'info';
  const logFormat = stringFlag(flags, 'log-format') ?? io.env['IOP_LOG_FORMAT'] ?? 'pretty';
  return {
    edgeFlag,
    edges,
    nodeId,
    retryIntervalMs,
    maxRetries,
    registerTimeoutMs,
    retainRuns,
    replacedExitCode,
    agentUser,
    fetchImage,
    token,
    tls,
    dataDir,
    logLevel,
    logFormat,
  };
}

/** The image fetcher of `--image-fetch-allow` (undefined without the flag: the default fetcher). */
function imageFetcher(allow: string | undefined): ImageFetcher | undefined {
  if (allow === undefined) return undefined;
  try {
    return createImageFetcher({ allowAddress: allowListCheck(allow.split(',')) });
  } catch (error) {
    throw new UsageError(`--image-fetch-allow: ${(error as Error).message}`);
  }
}

function tlsOptions(flags: ReturnType<typeof parseFlags>, cwd: string): DialOptions['tls'] {
  const caFile = stringFlag(flags, 'tls-ca');
  const servername = stringFlag(flags, 'tls-servername');
  const pinFlag = stringFlag(flags, 'edge-fingerprint');
  let fingerprint: string | undefined;
  if (pinFlag !== undefined) {
    fingerprint = parseEdgeFingerprint(pinFlag);
    if (fingerprint === undefined) {
      throw new UsageError(`--edge-fingerprint must be sha256:<64 hex digits>, got '${pinFlag}'`);
    }
  }
  if (!booleanFlag(flags, 'tls') && !caFile && !servername && !fingerprint) return undefined;
  const pin = fingerprint ? { fingerprint } : {};
  if (!caFile) return { servername, ...pin };
  const file = path.resolve(cwd, caFile);
  try {
    return { ca: fs.readFileSync(file), servername, ...pin };
  } catch (error) {
    throw new UsageError(`cannot read --tls-ca ${file}: ${(error as Error).message}`);
  }
}
