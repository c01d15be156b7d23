// `iop-node run`: connects this machine to an edge as a node and serves runs until stopped. Wiring only: read the
// settings (run-settings.ts), lock the data dir, load (or make) its identity key, open the history, build the
// agent, map the link's outcome to an exit code (0 for a deliberate stop; 1 for a rejection, a failed first
// connection or exhausted reconnects).
import { createTracing, type Tracing } from '@iop/tracing';
import path from 'node:path';
import type { AdapterFactory, AdapterType } from '../adapters/adapter.js';
import { openRunHistory } from '../history/node-sqlite-fallback.js';
import type { RunHistory } from '../history/run-history.js';
import { HISTORY_FILE_NAME } from '../history/sqlite-run-history.js';
import { betterSqliteDriver, nodeSqliteDriver } from '../history/sqlite-driver.js';
import { SqliteWorkspaceBindings } from '../history/workspace-bindings.js';
import { createDialer } from '../link/dial.js';
import { createFailoverDialer } from '../link/failover-dial.js';
import { describeOutcome, exitCodeFor } from '../link/edge-link.js';
import { createLogger, type Logger } from '@iop/logging';
import { NodeAgent } from '../runner/node-agent.js';
import { defaultAdapterFactories } from './adapter-factories.js';
import { UsageError, writeLine, type CliCommand, type CliIo } from './command.js';
import { systemProbeDeps } from '../discovery/probe-deps.js';
import { lockDataDir } from './data-dir.js';
import { loadOrCreateNodeIdentity, NodeIdentityError, type NodeIdentity } from './node-identity.js';
import { readRunSettings, type RunSettings } from './run-settings.js';
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
      const settings = readRunSettings(argv, io);
      const logger =
        overrides.logger?.(io, settings.logLevel, settings.logFormat) ??
        createLogger({ level: settings.logLevel, format: settings.logFormat, destination: io.stderr });

      const lock = lockDataDir(settings.dataDir);
      let history: RunHistory | undefined;
      let workspaceBindings: SqliteWorkspaceBindings | undefined;
      try {
        const identity = loadIdentity(settings.dataDir);
        const opened = openRunHistory({
          path: path.join(settings.dataDir, HISTORY_FILE_NAME),
          retainRuns: settings.retainRuns,
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
        warnAboutStartup(settings, identity, logger);
        const tracing = nodeTracing(io.env);
        const agent = new NodeAgent({
          nodeId: settings.nodeId,
          token: settings.token.token,
          identity: { privateKey: identity.privateKey, publicKeySpki: identity.publicKeySpki },
          agentVersion: AGENT_VERSION,
          connect: edgeConnector(settings, logger),
          factories:
            overrides.factories?.(io) ??
            defaultAdapterFactories({
              cwd: io.cwd,
              env: io.env,
              ...(settings.agentUser ? { agentUser: settings.agentUser } : {}),
              workspaceBindings,
            }),
          history,
          logger,
          ...(settings.fetchImage ? { fetchImage: settings.fetchImage } : {}),
          retryIntervalMs: settings.retryIntervalMs,
          maxRetries: settings.maxRetries,
          registerTimeoutMs: settings.registerTimeoutMs,
          // Probes run with the node's own environment: OLLAMA_HOST and the PATH its CLIs are found on.
          discovery: { deps: systemProbeDeps(io.env, undefined, settings.agentUser, io.cwd) },
          tracing,
        });
        logStart(settings, identity, logger);
        return await serveUntilStopped(agent, io, logger, tracing, settings.replacedExitCode);
      } finally {
        // The data-dir lock is released only once no thread of this process uses the history file.
        workspaceBindings?.close();
        await history?.close();
        lock.release();
      }
    },
  };
}

/** The node's identity key in its data dir (made on first use); a broken one is the operator's to fix. */
function loadIdentity(dataDir: string): NodeIdentity {
  try {
    return loadOrCreateNodeIdentity(dataDir);
  } catch (error) {
    if (error instanceof NodeIdentityError) throw new UsageError(error.message);
    throw error;
  }
}

/** A loose token file, a fresh identity's note, and an unencrypted, unauthenticated link are worth a warning. */
function warnAboutStartup(settings: RunSettings, identity: NodeIdentity, logger: Logger): void {
  if (settings.token.warning) logger.warn({}, settings.token.warning);
  if (identity.warning) logger.warn({}, identity.warning);
  if (settings.tls === undefined) {
    logger.warn(
      {},
      'the link to the edge is not encrypted and the edge is not authenticated: pass --edge-fingerprint ' +
        '(printed by iop-edge node register) or --tls-ca',
    );
  }
}

/** One edge: its dialer; several (one cluster): a dialer that tries them all, last good first. */
function edgeConnector(settings: RunSettings, logger: Logger): ReturnType<typeof createDialer> {
  const { edges, tls } = settings;
  return edges.length === 1
    ? createDialer({
        ...edges[0],
        tls,
        logger: logger.child({ component: 'wire' }),
      })
    : createFailoverDialer(
        edges.map((edge) => createDialer({ ...edge, tls, logger: logger.child({ component: 'wire' }) })),
      ).connect;
}

function logStart(settings: RunSettings, identity: NodeIdentity, logger: Logger): void {
  logger.info(
    {
      edge: settings.edgeFlag,
      nodeId: settings.nodeId,
      dataDir: settings.dataDir,
      tls: settings.tls !== undefined,
      edgeFingerprint: settings.tls?.fingerprint,
      tokenSource: settings.token.origin,
      identity: identity.fingerprint,
      identityCreated: identity.created,
      version: AGENT_VERSION,
    },
    'iop-node starting',
  );
}

/** Runs the agent until its link ends or a signal stops it; the exit code of its outcome. */
async function serveUntilStopped(
  agent: NodeAgent,
  io: CliIo,
  logger: Logger,
  tracing: Tracing,
  replacedExitCode: number,
): Promise<number> {
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
