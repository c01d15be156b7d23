// `iop-node run`: connects this machine to an edge as a node and serves runs until stopped. Wiring only: parse
// flags, read the token, lock the data dir, load (or make) its identity key, open the history, build the agent,
// map the link's outcome to an exit code (0 for a deliberate stop; 1 for a rejection, a failed first connection or
// exhausted reconnects).
import { allowListCheck } from '@iop/config';
import { createImageFetcher, type ImageFetcher } from '../adapters/http/image-fetch.js';
import { createTracing, type Tracing } from '@iop/tracing';
import fs from 'node:fs';
import path from 'node:path';
import type { AdapterFactory, AdapterType } from '../adapters/adapter.js';
import { openRunHistory } from '../history/node-sqlite-fallback.js';
import type { RunHistory } from '../history/run-history.js';
import { HISTORY_FILE_NAME } from '../history/sqlite-run-history.js';
import { betterSqliteDriver, nodeSqliteDriver } from '../history/sqlite-driver.js';
import { SqliteWorkspaceBindings } from '../history/workspace-bindings.js';
import { createDialer, parseEdgeAddress, type DialOptions } from '../link/dial.js';
import { createFailoverDialer } from '../link/failover-dial.js';
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_RETRY_INTERVAL_MS,
  describeOutcome,
  exitCodeFor,
  EXIT_CODE_REPLACED,
} from '../link/edge-link.js';
import { createLogger, type Logger } from '@iop/logging';
import { parseEdgeFingerprint } from '@iop/wire';
import { NodeAgent } from '../runner/node-agent.js';
import { defaultAdapterFactories } from './adapter-factories.js';
import {
  booleanFlag,
  integerFlag,
  parseFlags,
  stringFlag,
  UsageError,
  writeLine,
  type CliCommand,
  type CliIo,
} from './command.js';
import { systemProbeDeps } from '../discovery/probe-deps.js';
import { lockDataDir, resolveDataDir } from './data-dir.js';
import { loadOrCreateNodeIdentity, NodeIdentityError, type NodeIdentity } from './node-identity.js';
import { readToken, refuseTokenFlag } from './token.js';
import { AGENT_VERSION } from './version.js';

export interface RunCommandOverrides {
  factories?: (io: CliIo) => Partial<Record<AdapterType, AdapterFactory>>;
  logger?: (io: CliIo, level: string, format: string) => Logger;
}

const USAGE =
  'run --edge HOST:PORT[,HOST:PORT...] --node-id ID [--token-file F] [--data-dir D] [--retry-interval-ms N] [--max-retries N] ' +
  '[--register-timeout-ms N] [--edge-fingerprint sha256:HEX] [--tls] [--tls-ca FILE] [--tls-servername NAME] ' +
  '[--history-retain N] [--replaced-exit-code N] [--agent-user USER] [--image-fetch-allow CIDR[,CIDR...]] ' +
  '[--log-level L] [--log-format pretty|json]';

export function createRunCommand(overrides: RunCommandOverrides = {}): CliCommand {
  return {
    path: ['run'],
    summary: 'connect to an edge as a node and serve runs (token from --token-file or IOP_NODE_TOKEN)',
    usage: USAGE,
    async run(argv, io) {
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
      const imageFetchAllow = stringFlag(flags, 'image-fetch-allow');
      let fetchImage: ImageFetcher | undefined;
      if (imageFetchAllow !== undefined) {
        try {
          fetchImage = createImageFetcher({ allowAddress: allowListCheck(imageFetchAllow.split(',')) });
        } catch (error) {
          throw new UsageError(`--image-fetch-allow: ${(error as Error).message}`);
        }
      }
      const token = readToken(stringFlag(flags, 'token-file'), io.env, io.cwd);
      const tls = tlsOptions(flags, io.cwd);
      const dataDir = resolveDataDir(stringFlag(flags, 'data-dir'), io.env, io.cwd);
      const level = stringFlag(flags, 'log-level') ?? io.env['IOP_LOG_LEVEL'] ?? 'info';
      const format = stringFlag(flags, 'log-format') ?? io.env['IOP_LOG_FORMAT'] ?? 'pretty';
      const logger =
        overrides.logger?.(io, level, format) ?? createLogger({ level, format, destination: io.stderr });

      const lock = lockDataDir(dataDir);
      let history: RunHistory | undefined;
      let workspaceBindings: SqliteWorkspaceBindings | undefined;
      try {
        let identity: NodeIdentity;
        try {
          identity = loadOrCreateNodeIdentity(dataDir);
        } catch (error) {
          if (error instanceof NodeIdentityError) throw new UsageError(error.message);
          throw error;
        }
        const opened = openRunHistory({
          path: path.join(dataDir, HISTORY_FILE_NAME),
          retainRuns,
          // One line per failed attempt (attempts back off to 30 s), never one per event; runs go on regardless.
          onWriteFailure: (failure) =>
            logger.warn(
              { ...failure },
              'run history write failed; events and run starts/ends wait in memory (bounded) for a retry',
            ),
          onCheckpointFailure: (error) =>
            logger.warn({ err: error }, 'run history checkpoint worker failed; checkpointing in the writer'),
          onWriterThreadFailure: (error) =>
            logger.warn({ err: error }, 'run history writer thread failed; committing on the event loop'),
        });
        history = opened.history;
        // Which key each CLI workspace belongs to lives with the history (same file and engine, own connection).
        workspaceBindings = SqliteWorkspaceBindings.open(
          opened.history.path,
          opened.backend === 'node:sqlite' ? nodeSqliteDriver : betterSqliteDriver,
        );
        if (opened.fallbackReason !== undefined) {
          logger.info(
            { backend: opened.backend, reason: opened.fallbackReason },
            'run history uses node:sqlite',
          );
        }
        if (opened.history.recoveredRuns > 0) {
          logger.warn(
            { runs: opened.history.recoveredRuns },
            'runs left running by a previous process marked interrupted',
          );
        }
        if (token.warning) logger.warn({}, token.warning);
        if (identity.warning) logger.warn({}, identity.warning);
        if (tls === undefined) {
          logger.warn(
            {},
            'the link to the edge is not encrypted and the edge is not authenticated: pass --edge-fingerprint ' +
              '(printed by iop-edge node register) or --tls-ca',
          );
        }
        const tracing = nodeTracing(io.env);
        const agent = new NodeAgent({
          nodeId,
          token: token.token,
          identity: { privateKey: identity.privateKey, publicKeySpki: identity.publicKeySpki },
          agentVersion: AGENT_VERSION,
          connect:
            edges.length === 1
              ? createDialer({
                  ...edges[0],
                  tls,
                  logger: logger.child({ component: 'wire' }),
                })
              : createFailoverDialer(
                  edges.map((edge) =>
                    createDialer({ ...edge, tls, logger: logger.child({ component: 'wire' }) }),
                  ),
                ).connect,
          factories:
            overrides.factories?.(io) ??
            defaultAdapterFactories({
              cwd: io.cwd,
              env: io.env,
              ...(agentUser ? { agentUser } : {}),
              workspaceBindings,
            }),
          history,
          logger,
          ...(fetchImage ? { fetchImage } : {}),
          retryIntervalMs,
          maxRetries,
          registerTimeoutMs,
          // Probes run with the node's own environment: OLLAMA_HOST and the PATH its CLIs are found on.
          discovery: { deps: systemProbeDeps(io.env, undefined, agentUser, io.cwd) },
          tracing,
        });
        logger.info(
          {
            edge: edgeFlag,
            nodeId,
            dataDir,
            tls: tls !== undefined,
            edgeFingerprint: tls?.fingerprint,
            tokenSource: token.origin,
            identity: identity.fingerprint,
            identityCreated: identity.created,
            version: AGENT_VERSION,
          },
          'iop-node starting',
        );
        const unsubscribe = io.onSignal((signal) => {
          logger.info({ signal }, 'signal received, shutting down');
          void agent.stop('shutdown');
        });
        try {
          const outcome = await agent.run();
          if (outcome.kind !== 'stopped') writeLine(io.stderr, `iop-node: ${describeOutcome(outcome)}`);
          return exitCodeFor(outcome, replacedExitCode);
        } finally {
          unsubscribe();
          await tracing.shutdown().catch(() => undefined);
        }
      } finally {
        // The data-dir lock is released only once no thread of this process uses the history file.
        workspaceBindings?.close();
        await history?.close();
        lock.release();
      }
    },
  };
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

export const runCommand = createRunCommand();

/**
 * Spans of the node's runs, exported over OTLP/HTTP when IOP_OTLP_ENDPOINT names a traces endpoint
 * (IOP_TRACE_SAMPLE_RATIO, 0-1, samples traces the node starts; a traced edge's decision is followed).
 */
export function nodeTracing(env: NodeJS.ProcessEnv): Tracing {
  const endpoint = env['IOP_OTLP_ENDPOINT']?.trim() ?? '';
  const ratio = Number(env['IOP_TRACE_SAMPLE_RATIO'] ?? '1');
  return createTracing({
    enabled: endpoint !== '',
    serviceName: 'iop-node',
    otlpEndpoint: endpoint,
    sampleRatio: Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1,
  });
}
