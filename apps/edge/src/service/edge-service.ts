// The surface-neutral edge operations (EdgeService) over the connected-node registry.
//
// Runs: submitRun resolves the node, registers a RunTracker with the node's link and sends the RunRequest; it
// returns as soon as the request is on the wire (foreground and background alike — a background run differs only
// in that nobody has to read its handle). Every run event is published on the bus. The tracker ends the run
// exactly once (terminal event, disconnect, deadline, unconfirmed cancel, stuck reader) and is then forgotten, so
// `inFlightRuns` returns to zero. Errors are ServiceErrors; NodeLinkErrors are translated here, in one place.
import { randomBytes } from 'node:crypto';
import { CancelAction, create, type NodeCommandResponse, type RunRequest } from '@iop/wire';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import { NodeLinkError } from '../node/errors.js';
import type { NodeLink } from '../node/node-link.js';
import type { NodeRegistry } from '../node/node-registry.js';
import { ServiceError } from './errors.js';
import { RunTracker } from './run-tracker.js';
import type {
  EdgeService,
  NodeCommandInput,
  NodeSummary,
  RunHandle,
  SessionRef,
  SubmitRunInput,
} from './types.js';

export interface EdgeServiceDeps {
  registry: NodeRegistry;
  events: EventBus;
  logger: Logger;
  clock?: () => number;
  /** Run id generator (default `run-<time36>-<random hex>`). */
  generateRunId?: () => string;
  /** Events buffered per run handle (default 4096). */
  runBufferSize?: number;
  /** Node command timeout when the caller names none (default 30 s). */
  commandTimeoutMs?: number;
  /** Extra time the edge gives a run past its timeoutMs before ending it itself (default 2 s). */
  deadlineGraceMs?: number;
  /** How long a cancelled run may take to confirm before the edge ends it (default 5 s). */
  cancelGraceMs?: number;
}

export interface EdgeServiceImpl extends EdgeService {
  /** Runs being tracked (tests, metrics, shutdown). */
  readonly inFlightRuns: number;
  /** Refuses new runs and commands from now on; in-flight runs end when their nodes go away. */
  shutdown(): void;
}

const MAX_UINT32 = 0xffff_ffff;
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function createEdgeService(deps: EdgeServiceDeps): EdgeServiceImpl {
  const clock = deps.clock ?? Date.now;
  const logger = deps.logger;
  const runs = new Map<string, RunTracker>();
  const generateRunId =
    deps.generateRunId ?? (() => `run-${clock().toString(36)}-${randomBytes(6).toString('hex')}`);
  const bufferSize = deps.runBufferSize ?? 4096;
  const commandTimeoutMs = deps.commandTimeoutMs ?? 30_000;
  const deadlineGraceMs = deps.deadlineGraceMs ?? 2_000;
  const cancelGraceMs = deps.cancelGraceMs ?? 5_000;
  let shuttingDown = false;

  function resolveLink(ref?: string): NodeLink {
    const registry = deps.registry;
    const wanted = ref?.trim() ?? '';
    if (wanted !== '') {
      const byId = registry.get(wanted);
      if (byId) return byId;
      const byAlias = registry.findByAlias(wanted);
      if (byAlias.length === 1 && byAlias[0]) return byAlias[0];
      if (byAlias.length > 1) {
        throw new ServiceError(
          'node_ambiguous',
          `alias '${wanted}' matches several connected nodes (${byAlias.map((link) => link.nodeId).join(', ')}); choose one by node id`,
        );
      }
      throw new ServiceError('node_not_found', `node '${wanted}' is not connected${connectedList(registry)}`);
    }
    const links = registry.links();
    if (links.length === 1 && links[0]) return links[0];
    if (links.length === 0) throw new ServiceError('no_nodes', 'no node is connected');
    throw new ServiceError(
      'node_ambiguous',
      `several nodes are connected (${links.map(describe).join(', ')}); choose one by node id or alias`,
    );
  }

  function assertAccepting(): void {
    if (shuttingDown) throw new ServiceError('shutting_down', 'the edge is shutting down');
  }

  function validateRun(input: SubmitRunInput): void {
    const problems: string[] = [];
    for (const key of ['adapter', 'target', 'sessionId'] as const) {
      if (typeof input[key] !== 'string' || input[key].trim() === '') problems.push(`${key} is required`);
    }
    if (!Array.isArray(input.messages) || input.messages.length === 0)
      problems.push('messages must not be empty');
    if (
      input.timeoutMs !== undefined &&
      (!Number.isInteger(input.timeoutMs) || input.timeoutMs < 0 || input.timeoutMs > MAX_UINT32)
    ) {
      problems.push('timeoutMs must be an integer between 0 and 4294967295');
    }
    if (input.runId !== undefined && !RUN_ID_PATTERN.test(input.runId)) {
      problems.push('runId must be 1-128 letters, digits, ".", "_", ":" or "-"');
    }
    if (problems.length > 0) throw new ServiceError('invalid_request', problems.join('; '));
  }

  async function submitRun(input: SubmitRunInput): Promise<RunHandle> {
    assertAccepting();
    validateRun(input);
    if (input.signal?.aborted)
      throw new ServiceError('invalid_request', 'the run was aborted before it was submitted');
    const link = resolveLink(input.node);
    const runId = input.runId ?? generateRunId();
    if (runs.has(runId)) throw new ServiceError('invalid_request', `run id ${runId} is already in flight`);
    const request: RunRequest = create.runRequest({
      runId,
      adapter: input.adapter,
      target: input.target,
      sessionId: input.sessionId,
      background: input.background ?? false,
      workspace: input.workspace ?? '',
      messages: input.messages,
      tools: input.tools ?? [],
      toolChoiceJson: input.toolChoiceJson ?? '',
      params: input.params,
      timeoutMs: input.timeoutMs ?? 0,
      providerId: input.providerId ?? '',
      metadata: input.metadata ?? {},
    });
    const tracker = new RunTracker({
      request,
      link,
      events: deps.events,
      logger,
      clock,
      bufferSize,
      deadlineMs: input.timeoutMs ? input.timeoutMs + deadlineGraceMs : undefined,
      cancelGraceMs,
      signal: input.signal,
      onFinished: (finished) => {
        if (runs.get(finished.runId) === finished) runs.delete(finished.runId);
      },
    });
    runs.set(runId, tracker);
    try {
      await link.startRun(request, tracker);
    } catch (error) {
      runs.delete(runId);
      throw translate(error, link.nodeId);
    }
    tracker.arm();
    logger.debug(
      {
        runId,
        nodeId: link.nodeId,
        adapter: request.adapter,
        target: request.target,
        background: request.background,
      },
      'run submitted',
    );
    return tracker.handle();
  }

  async function nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse> {
    assertAccepting();
    if (typeof input.request?.command !== 'string' || input.request.command.trim() === '') {
      throw new ServiceError('invalid_request', 'command is required');
    }
    const link = resolveLink(input.node);
    try {
      return await link.command(input.request, {
        timeoutMs: input.timeoutMs ?? commandTimeoutMs,
        ...(input.signal ? { signal: input.signal } : {}),
      });
    } catch (error) {
      throw translate(error, link.nodeId);
    }
  }

  return {
    get inFlightRuns() {
      return runs.size;
    },
    shutdown() {
      shuttingDown = true;
    },
    submitRun,
    cancelRun(runId, reason) {
      const tracker = runs.get(runId);
      if (!tracker) return Promise.resolve(false);
      return tracker.cancel(reason).then(() => true);
    },
    async terminateSession(ref: SessionRef) {
      assertAccepting();
      validateSessionRef(ref);
      const link = resolveLink(ref.node);
      try {
        await link.cancel({
          action: CancelAction.CANCEL_ACTION_TERMINATE_SESSION,
          runId: '',
          adapter: ref.adapter,
          target: ref.target,
          sessionId: ref.sessionId,
          reason: 'terminate-session',
        });
      } catch (error) {
        throw translate(error, link.nodeId);
      }
      return link.nodeId;
    },
    nodeCommand,
    usageStatus(ref: SessionRef) {
      validateSessionRef(ref);
      return nodeCommand({
        ...(ref.node !== undefined ? { node: ref.node } : {}),
        request: create.nodeCommandRequest({
          command: 'status',
          adapter: ref.adapter,
          target: ref.target,
          sessionId: ref.sessionId,
        }),
      });
    },
    listNodes(): NodeSummary[] {
      return deps.registry.list();
    },
    resolveNode(ref?: string): NodeSummary {
      return resolveLink(ref).summary();
    },
  };
}

function validateSessionRef(ref: SessionRef): void {
  const missing = (['adapter', 'target', 'sessionId'] as const).filter(
    (key) => typeof ref[key] !== 'string' || ref[key].trim() === '',
  );
  if (missing.length > 0) throw new ServiceError('invalid_request', `${missing.join(', ')} required`);
}

/** NodeLinkError → ServiceError; anything else is passed through as a node error. */
function translate(error: unknown, nodeId: string): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof NodeLinkError) {
    switch (error.code) {
      case 'link_closed':
      case 'send_failed':
        return new ServiceError('node_disconnected', error.message, { cause: error });
      case 'request_timeout':
        return new ServiceError('timeout', error.message, { cause: error });
      case 'request_aborted':
      case 'duplicate_run':
        return new ServiceError('invalid_request', error.message, { cause: error });
      default: {
        const unreachable: never = error.code;
        return new ServiceError('node_error', `node ${nodeId}: ${String(unreachable)}`, { cause: error });
      }
    }
  }
  return new ServiceError(
    'node_error',
    `node ${nodeId}: ${error instanceof Error ? error.message : String(error)}`,
    {
      cause: error,
    },
  );
}

function describe(link: NodeLink): string {
  return link.info.alias && link.info.alias !== link.nodeId
    ? `${link.nodeId} (${link.info.alias})`
    : link.nodeId;
}

function connectedList(registry: NodeRegistry): string {
  const links = registry.links();
  return links.length === 0 ? '; no node is connected' : `; connected: ${links.map(describe).join(', ')}`;
}
