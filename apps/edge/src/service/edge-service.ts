// The surface-neutral edge operations (EdgeService) over the node registry and the provider pool.
//
// Admission: every run — whatever surface it came through — goes through submitRun(destination, spec). The
// service takes the capacity (a pool lease: provider slot and node slot, waiting in the FIFO queue when none is
// free), the session (fixed, or a free slot of a base id), applies the model's generation policy, registers a
// RunTracker with the node's link and sends the RunRequest; it returns as soon as the request is on the wire
// (foreground and background alike — a background run differs only in that nobody has to read its handle).
//
// Lifetime: the tracker is the run's one owner from then on. It ends the run exactly once (terminal event,
// disconnect, the one deadline, an unconfirmed cancel after the one grace period, a stuck reader) and then the
// service releases the lease and the session, once. A caller's abort signal is the one cancel path for client
// disconnects. Errors are ServiceErrors; PoolErrors and NodeLinkErrors are translated here, in one place.
import { create, RunKind, type ChatMessage, type NodeCommandResponse, type RunRequest } from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import { NodeLinkError } from '../node/errors.js';
import type { NodeLink } from '../node/node-link.js';
import type { NodeRegistry } from '../node/node-registry.js';
import { isPoolError, type PoolError } from '../pool/errors.js';
import type { Lease, ProviderPool } from '../pool/provider-pool.js';
import { isGovernanceError, type GovernanceError } from '../governance/errors.js';
import { estimateTokens } from '../governance/estimate-tokens.js';
import type { Admission, Governor, RunEnd } from '../governance/governor.js';
import { disabledTracing, type TraceSpan, type Tracing } from '@iop/tracing';
import { randomHex } from '../random-ids.js';
import { ServiceError } from './errors.js';
import { applyGenerationPolicy } from './generation-policy.js';
import { RunTracker } from './run-tracker.js';
import { SessionSlots, type SessionSlot } from './session-slots.js';
import type {
  EdgeService,
  NodeCommandInput,
  NodeSummary,
  RunDestination,
  RunHandle,
  RunSpec,
  RunSurface,
  SessionRef,
  SubmitOptions,
} from './types.js';

/** What admission reports to metrics (the runtime passes the shared EdgeMetrics; tests a recorder). */
export interface AdmissionMetrics {
  /** A run was admitted and sent; `providerId` is undefined for explicit routes no provider matches. */
  dispatched(surface: RunSurface, providerId: string | undefined, nodeId: string): void;
  /** Admission refused a run for lack of capacity. */
  rejected(surface: RunSurface, model: string, reason: 'queue_full' | 'queue_timeout' | 'no_provider'): void;
}

export const noAdmissionMetrics: AdmissionMetrics = {
  dispatched: () => undefined,
  rejected: () => undefined,
};

export interface EdgeServiceDeps {
  registry: NodeRegistry;
  pool: ProviderPool;
  events: EventBus;
  logger: Logger;
  clock?: Clock;
  /** Session slots for `{ kind: 'slot' }` sessions; created when omitted. */
  sessions?: SessionSlots;
  metrics?: AdmissionMetrics;
  /**
   * Principal limits (allow-list, rpm/tpm, max_concurrent, budget) checked before capacity is taken, and the
   * usage record of every run; none = no limits, no usage records.
   */
  governor?: Governor;
  /** Spans of admission (the queue wait) and of each run; default off. */
  tracing?: Tracing;
  /** Run id generator (default `run-<time36>-<random hex>`). */
  generateRunId?: () => string;
  /** Events buffered per run handle (default 4096). */
  runBufferSize?: number;
  /** Node command timeout when the caller names none (default 30 s). */
  commandTimeoutMs?: number;
  /** Extra time the edge gives a run past its timeoutMs before ending it itself (default 2 s). */
  deadlineGraceMs?: number;
  /** How long a cancelled run may take to confirm before the edge ends it and releases its capacity (default 5 s). */
  cancelGraceMs?: number;
}

export interface EdgeServiceImpl extends EdgeService {
  /** Runs being tracked (tests, metrics, shutdown). */
  readonly inFlightRuns: number;
  /** Refuses new runs and commands from now on; queued runs are refused, in-flight ones end with their nodes. */
  shutdown(): void;
}

const MAX_UINT32 = 0xffff_ffff;
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function createEdgeService(deps: EdgeServiceDeps): EdgeServiceImpl {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  const pool = deps.pool;
  const sessions = deps.sessions ?? new SessionSlots();
  const metrics = deps.metrics ?? noAdmissionMetrics;
  const runs = new Map<string, RunTracker>();
  const generateRunId = deps.generateRunId ?? (() => `run-${clock.now().toString(36)}-${randomHex(6)}`);
  const bufferSize = deps.runBufferSize ?? 4096;
  const commandTimeoutMs = deps.commandTimeoutMs ?? 30_000;
  const deadlineGraceMs = deps.deadlineGraceMs ?? 2_000;
  const cancelGraceMs = deps.cancelGraceMs ?? 5_000;
  const tracing = deps.tracing ?? disabledTracing;
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

  async function admit(
    destination: RunDestination,
    options: SubmitOptions,
  ): Promise<{ lease: Lease; queueMs: number }> {
    const started = performance.now();
    try {
      const lease =
        destination.kind === 'model'
          ? await pool.acquire(destination.model, { signal: options.signal })
          : await pool.acquireRoute(
              {
                nodeId: resolveLink(destination.node).nodeId,
                adapter: destination.adapter,
                target: destination.target,
              },
              { signal: options.signal },
            );
      return { lease, queueMs: performance.now() - started };
    } catch (error) {
      if (!isPoolError(error)) throw error;
      const reason = rejectionReason(error);
      if (reason) metrics.rejected(options.surface, error.details.model ?? '', reason);
      throw fromPoolError(error);
    }
  }

  async function submitRun(
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
  ): Promise<RunHandle> {
    assertAccepting();
    validateRun(destination, spec);
    if (options.signal?.aborted) {
      throw new ServiceError('aborted', 'the run was aborted before it was submitted');
    }
    if (spec.runId !== undefined && runs.has(spec.runId)) {
      throw new ServiceError('invalid_request', `run id ${spec.runId} is already in flight`);
    }
    const admission = govern(destination, spec, options);
    // Off (the default): no span and no attribute object, one branch.
    const queueSpan = tracing.enabled
      ? tracing.startSpan('iop.edge.admission', {
          parent: options.traceparent,
          kind: 'server',
          attributes: { 'iop.surface': options.surface, 'iop.principal': admission?.principal ?? '' },
        })
      : undefined;
    let admitted: { lease: Lease; queueMs: number };
    try {
      admitted = await admit(destination, options);
    } catch (error) {
      admission?.finish(refused(error));
      queueSpan?.end(error instanceof Error ? error.message : String(error));
      throw error;
    }
    queueSpan?.end();
    const { lease, queueMs } = admitted;
    let session: SessionSlot | undefined;
    try {
      // The queue wait may have outlived the node, the edge or the caller.
      assertAccepting();
      const link = deps.registry.get(lease.nodeId);
      if (!link) {
        throw new ServiceError(
          'node_disconnected',
          `node ${lease.nodeId} disconnected before the run started`,
        );
      }
      if (options.signal?.aborted) throw new ServiceError('aborted', 'the run was aborted while queued');
      requireRunKind(link, spec);
      const adapter = destination.kind === 'model' ? lease.adapter : destination.adapter;
      const target = lease.target;
      session =
        spec.session.kind === 'fixed'
          ? { sessionId: spec.session.sessionId, release: () => undefined }
          : sessions.acquire(lease.nodeId, adapter, target, spec.session.baseId);
      const handle = await start(
        link,
        lease,
        session,
        adapter,
        target,
        destination,
        spec,
        options,
        queueMs,
        admission,
      );
      metrics.dispatched(options.surface, lease.providerId, lease.nodeId);
      return handle;
    } catch (error) {
      session?.release();
      lease.release();
      admission?.finish({ ...refused(error), node: lease.nodeId, provider: lease.providerId ?? '', queueMs });
      throw error;
    }
  }

  /** The principal's limits, before any capacity is taken; undefined when the edge has no governor. */
  function govern(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Admission | undefined {
    if (!deps.governor) return undefined;
    try {
      return deps.governor.admit({
        principal: options.principal,
        surface: options.surface,
        model: options.model ?? (destination.kind === 'model' ? destination.model : destination.target),
        estimatedTokens: estimateTokens(estimationMessages(spec)),
      });
    } catch (error) {
      if (isGovernanceError(error)) throw fromGovernanceError(error);
      throw error;
    }
  }

  async function start(
    link: NodeLink,
    lease: Lease,
    session: SessionSlot,
    adapter: string,
    target: string,
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
    queueMs: number,
    admission: Admission | undefined,
  ): Promise<RunHandle> {
    const runId = spec.runId ?? generateRunId();
    if (runs.has(runId)) throw new ServiceError('invalid_request', `run id ${runId} is already in flight`);
    // Read the policy after the queue wait: a live config refresh may have changed it meanwhile.
    const policy = destination.kind === 'model' ? pool.model(destination.model) : undefined;
    const params = policy
      ? applyGenerationPolicy(
          spec.params ?? create.generationParams({}),
          policy,
          spec.reasoningRequested ?? false,
        )
      : spec.params;
    const span: TraceSpan | undefined = tracing.enabled
      ? tracing.startSpan('iop.edge.run', {
          parent: options.traceparent,
          kind: 'client',
          attributes: {
            'iop.run_id': runId,
            'iop.node': link.nodeId,
            'iop.adapter': adapter,
            'iop.target': target,
            'iop.provider': lease.providerId ?? '',
            'iop.surface': options.surface,
          },
        })
      : undefined;
    // Every field named (the type requires them all): one object, no default message to copy from.
    const request: RunRequest = {
      runId,
      adapter,
      target,
      sessionId: session.sessionId,
      background: spec.background ?? false,
      workspace: spec.workspace ?? '',
      messages: spec.messages,
      tools: spec.tools ?? [],
      toolChoiceJson: spec.toolChoiceJson ?? '',
      params,
      timeoutMs: spec.timeoutMs ?? 0,
      providerId: lease.providerId ?? '',
      metadata: spec.metadata ?? {},
      // The node continues this span's trace (or the caller's, when the edge does not trace) and passes it on.
      traceparent: span?.traceparent ?? options.traceparent ?? '',
      collect: spec.collect ?? false,
      extraBodyJson: spec.extraBodyJson ?? '',
      kind: spec.kind ?? RunKind.RUN_KIND_CHAT,
      completion: spec.completion,
      embedding: spec.embedding,
      fetchImageUrls: spec.fetchImageUrls ?? false,
    };
    const tracker = new RunTracker({
      request,
      link,
      events: deps.events,
      logger,
      clock,
      bufferSize,
      deadlineMs: spec.timeoutMs ? spec.timeoutMs + deadlineGraceMs : undefined,
      cancelGraceMs,
      signal: options.signal,
      queueMs,
      admitted: {
        surface: options.surface,
        model: destination.kind === 'model' ? destination.model : '',
        providerId: lease.providerId ?? '',
        queueMs,
      },
      onFinished: (finished) => {
        if (runs.get(finished.runId) === finished) runs.delete(finished.runId);
        session.release();
        lease.release();
        const outcome = finished.outcome;
        span?.end(outcome?.status === 'error' ? `${outcome.code}: ${outcome.message}` : undefined);
        admission?.finish({
          runId: finished.runId,
          outcome: finished.outcome?.status ?? 'error',
          usage: finished.usage,
          provider: lease.providerId ?? '',
          node: finished.nodeId,
          queueMs,
          durationMs: finished.durationMs,
        });
      },
    });
    runs.set(runId, tracker);
    try {
      await link.startRun(request, tracker);
    } catch (error) {
      runs.delete(runId);
      span?.end(error instanceof Error ? error.message : String(error));
      throw translate(error, link.nodeId);
    }
    tracker.arm();
    logger.debug(
      {
        runId,
        nodeId: link.nodeId,
        surface: options.surface,
        provider: lease.providerId,
        adapter,
        target,
        queueMs,
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
        await link.terminateSession(
          { adapter: ref.adapter, target: ref.target, sessionId: ref.sessionId },
          'terminate-session',
        );
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
    providers: () => pool.snapshot(),
    models: {
      has: (model) => pool.hasModel(model),
      get: (model) => pool.model(model),
      ids: () => pool.modelIds(),
      backends: (model) => pool.modelBackends(model),
    },
    admissionTotals: () => pool.totals(),
  };
}

/** The token estimate of a run's input (the governor's pre-admission check) reads its text as messages. */
function estimationMessages(spec: RunSpec): readonly ChatMessage[] {
  switch (spec.kind ?? RunKind.RUN_KIND_CHAT) {
    case RunKind.RUN_KIND_COMPLETION:
      return [
        create.chatMessage({ content: `${spec.completion?.prompt ?? ''}${spec.completion?.suffix ?? ''}` }),
      ];
    case RunKind.RUN_KIND_EMBEDDING:
      return (spec.embedding?.inputs ?? []).map((content) => create.chatMessage({ content }));
    case RunKind.RUN_KIND_CHAT:
    case RunKind.UNRECOGNIZED:
      return spec.messages;
  }
}

const RUN_KIND_NAMES: Partial<Record<RunKind, string>> = {
  [RunKind.RUN_KIND_COMPLETION]: 'text completion',
  [RunKind.RUN_KIND_EMBEDDING]: 'embedding',
};

/**
 * A node runs only the kinds it announced at registration (older nodes: chat only); anything else is refused
 * here, before it is sent, with a message that says what to do. A node that announces no kinds predates the
 * request fields of GenerationParams 10-13 and RunRequest.extra_body_json too: it would ignore them, so a run
 * carrying one is refused the same way rather than answered without it.
 */
function requireRunKind(link: NodeLink, spec: RunSpec): void {
  const kind = spec.kind ?? RunKind.RUN_KIND_CHAT;
  const node = `node ${link.nodeId} (iop-node ${link.info.agentVersion || 'unknown version'})`;
  if (kind !== RunKind.RUN_KIND_CHAT && !link.info.runKinds.includes(kind)) {
    throw new ServiceError(
      'node_error',
      `${node} does not run ${RUN_KIND_NAMES[kind] ?? `kind ${kind}`} requests: upgrade iop-node on it`,
    );
  }
  if (link.info.runKinds.length > 0) return;
  const field = newerField(spec);
  if (field) {
    throw new ServiceError(
      'node_error',
      `${node} predates '${field}' and would ignore it: upgrade iop-node on it, or leave the field out`,
    );
  }
}

/** The first request field only nodes that announce run kinds apply, if the run carries one. */
function newerField(spec: RunSpec): string | undefined {
  const params = spec.params;
  if (params?.seed !== undefined) return 'seed';
  if (params?.presencePenalty !== undefined) return 'presence_penalty';
  if (params?.frequencyPenalty !== undefined) return 'frequency_penalty';
  if (params?.responseFormatJson) return 'response_format';
  if (spec.extraBodyJson) return 'forwarded fields';
  if (spec.messages.some((message) => message.imageUrls.length > 0)) return 'image_url (remote image URLs)';
  return undefined;
}

function validateRun(destination: RunDestination, spec: RunSpec): void {
  const problems: string[] = [];
  if (destination.kind === 'model') {
    if (typeof destination.model !== 'string' || destination.model.trim() === '')
      problems.push('model is required');
  } else {
    for (const key of ['adapter', 'target'] as const) {
      if (typeof destination[key] !== 'string' || destination[key].trim() === '')
        problems.push(`${key} is required`);
    }
  }
  const sessionId = spec.session?.kind === 'fixed' ? spec.session.sessionId : spec.session?.baseId;
  if (typeof sessionId !== 'string' || sessionId.trim() === '') problems.push('sessionId is required');
  const kind = spec.kind ?? RunKind.RUN_KIND_CHAT;
  if (kind === RunKind.RUN_KIND_CHAT && (!Array.isArray(spec.messages) || spec.messages.length === 0))
    problems.push('messages must not be empty');
  if (kind === RunKind.RUN_KIND_COMPLETION && !spec.completion)
    problems.push('a completion run needs its prompt');
  if (kind === RunKind.RUN_KIND_EMBEDDING && (spec.embedding?.inputs.length ?? 0) === 0)
    problems.push('an embedding run needs at least one input');
  if (
    spec.timeoutMs !== undefined &&
    (!Number.isInteger(spec.timeoutMs) || spec.timeoutMs < 0 || spec.timeoutMs > MAX_UINT32)
  ) {
    problems.push('timeoutMs must be an integer between 0 and 4294967295');
  }
  if (spec.runId !== undefined && !RUN_ID_PATTERN.test(spec.runId)) {
    problems.push('runId must be 1-128 letters, digits, ".", "_", ":" or "-"');
  }
  if (problems.length > 0) throw new ServiceError('invalid_request', problems.join('; '));
}

function validateSessionRef(ref: SessionRef): void {
  const missing = (['adapter', 'target', 'sessionId'] as const).filter(
    (key) => typeof ref[key] !== 'string' || ref[key].trim() === '',
  );
  if (missing.length > 0) throw new ServiceError('invalid_request', `${missing.join(', ')} required`);
}

function rejectionReason(error: PoolError): 'queue_full' | 'queue_timeout' | 'no_provider' | undefined {
  if (error.code === 'queue_full' || error.code === 'queue_timeout') return error.code;
  return error.code === 'no_provider_available' ? 'no_provider' : undefined;
}

/** A run refused after admission (no capacity, node gone, send failed): recorded with no tokens. */
function refused(error: unknown): RunEnd {
  return {
    runId: '',
    outcome: error instanceof ServiceError && error.code === 'aborted' ? 'cancelled' : 'rejected',
    usage: { inputTokens: 0, outputTokens: 0 },
    provider: '',
    node: '',
    queueMs: 0,
    durationMs: 0,
  };
}

/** A limit's refusal as the ServiceError surfaces map; a model outside the allow-list looks like no model at all. */
function fromGovernanceError(error: GovernanceError): ServiceError {
  if (error.code === 'model_not_allowed') return new ServiceError('model_not_found', error.message);
  return new ServiceError(error.code, error.message, {
    cause: error,
    retryAfterSeconds: error.retryAfterSeconds,
  });
}

/** PoolError → ServiceError of the same meaning (surfaces only know ServiceErrors). */
export function fromPoolError(error: PoolError): ServiceError {
  const options = { cause: error, retryAfterSeconds: error.details.retryAfterSeconds };
  switch (error.code) {
    case 'node_unavailable':
      return new ServiceError('node_disconnected', error.message, options);
    case 'model_not_found':
    case 'no_provider_available':
    case 'queue_full':
    case 'queue_timeout':
    case 'aborted':
    case 'shutting_down':
      return new ServiceError(error.code, error.message, options);
    default: {
      const unreachable: never = error.code;
      return new ServiceError('node_error', `unknown pool error ${String(unreachable)}`, options);
    }
  }
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
    { cause: error },
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
