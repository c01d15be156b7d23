// The surface-neutral edge operations (EdgeService) over placement (this edge's pool and, in cluster mode, the
// other edges of the fabric) and the node registry.
//
// Runs: every run — whatever surface it came through — goes through submitRun(destination, spec, options), which
// validates it and hands it to a RunSupervisor (run-supervisor.ts): the run's one owner from submit to release
// (limits, placement and capacity, the one deadline, the one cancel path, the release). submitRun returns as soon
// as the run is on its way (foreground and background alike). The service keeps the dispatched runs by id
// (cancelRun) and nothing else about their lifetime.
//
// Child runs (SubmitOptions.parent: an agent's model calls) are made only for a live parent executing here on the
// node that carried the call (`parent_not_live` otherwise), only to a models[] id no cli provider serves (so a child
// never waits for agent capacity), always on this edge; the supervisor does the rest (run-supervisor.ts).
//
// Node operations (commands, sessions, usage status) go to a node connected here, through placement's LocalNodes.
// Errors are ServiceErrors; placement's errors are translated in run-errors.ts. The service knows nothing below
// placement (the layering test refuses service → pool, node, transport).
import { RunRegistry } from './run-registry.js';
import { create, RunKind, type NodeCommandResponse } from '@iop/wire';
import { systemClock, type Clock } from '../clock.js';
import type { EventBus } from '../events/types.js';
import type { Logger } from '../logging.js';
import { isPlacementError } from '../placement/errors.js';
import {
  createEdgePlacement,
  type EdgePlacementDeps,
  type LocalNodes,
  type ModelCatalog,
} from '../placement/edge-placement.js';
import type { Placement } from '../placement/placement.js';
import type { ProviderOutcomes } from '../placement/outcomes.js';
import { admissionTokens } from '../governance/admission-tokens.js';
import { estimationMessages } from './estimation-messages.js';
import type { Governor } from '../governance/governor.js';
import type { SharedLimits } from '../governance/shared-limits.js';
import { disabledTracing, type Tracing } from '@iop/tracing';
import { randomHex } from '../random-ids.js';
import { ServiceError } from './errors.js';
import { fromPlacementError } from './run-errors.js';
import {
  noAdmissionMetrics,
  RunSupervisor,
  type AdmissionMetrics,
  type RunState,
  type SupervisorContext,
} from './run-supervisor.js';
import type {
  EdgeService,
  NodeCommandInput,
  NodeSummary,
  RunDestination,
  RunHandle,
  ParentRef,
  RunSpec,
  SessionRef,
  SubmitOptions,
} from './types.js';

export type { AdmissionMetrics } from './run-supervisor.js';

/**
 * What the service is built over: the node registry and pool (with, in cluster mode, the other edges) go straight
 * into placement (placement/edge-placement.ts); the service itself knows only the EdgePlacement made of them.
 */
export interface EdgeServiceDeps extends EdgePlacementDeps {
  /** Cluster mode: a key's limits counted on its home edge (before a run takes capacity anywhere). */
  sharedLimits?: SharedLimits;
  events: EventBus;
  logger: Logger;
  clock?: Clock;
  /** The registry of long-lived runs (service/run-registry.ts); a single edge's one is created when omitted. */
  runRegistry?: RunRegistry;
  metrics?: AdmissionMetrics;
  /**
   * Principal limits (allow-list, rpm/tpm, max_concurrent, budget) checked before capacity is taken, and the
   * usage record of every run; none = no limits, no usage records.
   */
  governor?: Governor;
  /** Spans of admission (the queue wait) and of each run; default off. */
  tracing?: Tracing;
  /**
   * Answer tokens a run reserves against tpm and the budget when neither the request nor its model names a limit
   * (`usage.reserve_max_tokens`; default 0: the prompt only).
   */
  reserveMaxTokens?: number;
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
  /** Told every state a run's supervisor enters (tests). */
  onRunState?: (run: RunSupervisor, state: RunState) => void;
  /**
   * Dispatches a models[] run may take in all when its model names none (`routing.retry.max_attempts`, read live);
   * default 1: no retry.
   */
  retryAttempts?: () => number;
  /** The providers' circuits, told each attempt's outcome; none = not recorded. */
  outcomes?: ProviderOutcomes;
}

export interface EdgeServiceImpl extends EdgeService {
  /**
   * Admits and starts a run on this edge's own nodes, whatever the fabric looks like: a run another edge
   * forwarded here (cluster/ serves it through this). Same admission and supervision as submitRun.
   */
  runHere(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle>;
  /** Runs being tracked (tests, metrics, shutdown). */
  readonly inFlightRuns: number;
  /** Refuses new runs and commands from now on; queued runs are refused, in-flight ones end with their nodes. */
  shutdown(): void;
}

const MAX_UINT32 = 0xffff_ffff;
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function createEdgeService(deps: EdgeServiceDeps): EdgeServiceImpl {
  const clock = deps.clock ?? systemClock;
  const edge = createEdgePlacement(deps);
  const { models, nodes } = edge;
  const runRegistry = deps.runRegistry ?? new RunRegistry({ clock });
  const runs = new Map<string, RunSupervisor>();
  const generateRunId = deps.generateRunId ?? (() => `run-${clock.now().toString(36)}-${randomHex(6)}`);
  const commandTimeoutMs = deps.commandTimeoutMs ?? 30_000;
  let shuttingDown = false;
  const context = supervisorContext(deps, clock, models, edge.placement, runs, () => shuttingDown);

  /** Why a run is refused before a supervisor is made for it; undefined = go ahead. */
  function precheck(
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
  ): ServiceError | undefined {
    try {
      assertAccepting();
      validateRun(destination, spec);
    } catch (error) {
      return error as ServiceError;
    }
    if (options.signal?.aborted)
      return new ServiceError('aborted', 'the run was aborted before it was submitted');
    if (spec.runId !== undefined && runs.has(spec.runId)) {
      return new ServiceError('invalid_request', `run id ${spec.runId} is already in flight`);
    }
    return undefined;
  }

  function assertAccepting(): void {
    if (shuttingDown) throw new ServiceError('shutting_down', 'the edge is shutting down');
  }

  function submitRun(destination: RunDestination, spec: RunSpec, options: SubmitOptions): Promise<RunHandle> {
    return supervise(destination, spec, options, false);
  }

  function supervise(
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
    here: boolean,
  ): Promise<RunHandle> {
    if (options.parent !== undefined) return superviseChild(destination, spec, options);
    const refusal = precheck(destination, spec, options);
    if (refusal) return Promise.reject(refusal);
    return new RunSupervisor(
      context,
      spec.runId ?? generateRunId(),
      destination,
      spec,
      options,
      here,
    ).start();
  }

  /** A child run: its parent checked, then supervised on this edge under the parent (run-supervisor.ts). */
  function superviseChild(
    destination: RunDestination,
    spec: RunSpec,
    options: SubmitOptions,
  ): Promise<RunHandle> {
    const refusal = precheck(destination, spec, options) ?? childRefusal(destination, options);
    if (refusal) {
      context.metrics.childEnded?.('rejected');
      return Promise.reject(refusal);
    }
    const parent = runs.get((options.parent as ParentRef).runId) as RunSupervisor;
    const child = new RunSupervisor(
      context,
      spec.runId ?? generateRunId(),
      destination,
      spec,
      options,
      true,
      parent,
    );
    parent.adopt(child);
    return child.start();
  }

  /** Why a child run may not start; undefined = go ahead. */
  function childRefusal(destination: RunDestination, options: SubmitOptions): ServiceError | undefined {
    const ref = options.parent as ParentRef;
    if (!runs.get(ref.runId)?.acceptsChildrenFrom(ref.nodeId)) {
      return new ServiceError(
        'parent_not_live',
        `run ${ref.runId} is not a live run executing on node ${ref.nodeId}; its model calls are refused`,
      );
    }
    if (destination.kind !== 'model') {
      return new ServiceError(
        'invalid_request',
        "an agent's model call must name a models[] id, not a route",
      );
    }
    if (models.backends(destination.model).includes('cli')) {
      return new ServiceError(
        'invalid_request',
        `model '${destination.model}' is served by a cli provider; an agent's model calls may not wait for agent capacity`,
      );
    }
    return undefined;
  }

  return {
    get inFlightRuns() {
      return runs.size;
    },
    shutdown() {
      shuttingDown = true;
    },
    submitRun,
    runHere: (destination, spec, options) => supervise(destination, spec, options, true),
    cancelRun(runId, reason) {
      const run = runs.get(runId);
      if (!run) return Promise.resolve(false);
      return run.cancel(reason).then(() => true);
    },
    ...nodeOperations(nodes, commandTimeoutMs, assertAccepting),
    listNodes: () => nodes.list(),
    resolveParent(parent: ParentRef) {
      const run = runs.get(parent.runId);
      if (!run?.acceptsChildrenFrom(parent.nodeId)) return undefined;
      return { principal: run.admittedAs };
    },
    agentRuns() {
      const views = [];
      for (const run of runs.values()) {
        const view = run.agentView();
        if (view) views.push(view);
      }
      return views;
    },
    providers: () => edge.providers(),
    fabricNodes: () => edge.fabricNodes(),
    inFabric: edge.inFabric,
    runRegistry,
    models,
    admissionTotals: () => edge.admissionTotals(),
  };
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

/** What every run supervisor of this service shares: placement, limits, policies read live, the run table. */
function supervisorContext(
  deps: EdgeServiceDeps,
  clock: Clock,
  models: ModelCatalog,
  placement: Placement,
  runs: Map<string, RunSupervisor>,
  shuttingDown: () => boolean,
): SupervisorContext {
  return {
    placement,
    events: deps.events,
    logger: deps.logger,
    clock,
    metrics: deps.metrics ?? noAdmissionMetrics,
    tracing: deps.tracing ?? disabledTracing,
    governor: deps.governor,
    reservedTokens: (spec, model) => {
      // Prompt + the answer's limit (admission-tokens.ts), under the policy the run was resolved with.
      const policy = model?.config;
      return admissionTokens(estimationMessages(spec), {
        requested: spec.params?.maxTokens,
        modelDefault: policy?.default_max_tokens,
        modelMinimum: policy?.min_max_tokens,
        fallback: deps.reserveMaxTokens ?? 0,
      });
    },
    sharedLimits: deps.sharedLimits,
    bufferSize: deps.runBufferSize ?? 4096,
    deadlineGraceMs: deps.deadlineGraceMs ?? 2_000,
    cancelGraceMs: deps.cancelGraceMs ?? 5_000,
    onState: deps.onRunState,
    maxAttempts: (request) => {
      if (request.destination.kind !== 'model') return 1;
      return request.modelPolicy?.config.retry.max_attempts ?? deps.retryAttempts?.() ?? 1;
    },
    outcomes: deps.outcomes,
    shuttingDown,
    register(run) {
      if (runs.has(run.runId)) return false;
      runs.set(run.runId, run);
      return true;
    },
    unregister(run) {
      if (runs.get(run.runId) === run) runs.delete(run.runId);
    },
  };
}

/** Commands, session termination and usage status on a node connected here; placement's errors as ServiceErrors. */
function nodeOperations(
  nodes: LocalNodes,
  commandTimeoutMs: number,
  assertAccepting: () => void,
): Pick<EdgeService, 'nodeCommand' | 'terminateSession' | 'usageStatus' | 'resolveNode'> {
  /** `operation`'s result; a PlacementError (node not found, link failure) as the ServiceError of its meaning. */
  async function onNode<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw isPlacementError(error) ? fromPlacementError(error) : error;
    }
  }

  function resolveNode(ref?: string): NodeSummary {
    try {
      return nodes.resolve(ref);
    } catch (error) {
      throw isPlacementError(error) ? fromPlacementError(error) : error;
    }
  }

  async function nodeCommand(input: NodeCommandInput): Promise<NodeCommandResponse> {
    assertAccepting();
    if (typeof input.request?.command !== 'string' || input.request.command.trim() === '') {
      throw new ServiceError('invalid_request', 'command is required');
    }
    const request = input.request;
    return onNode(() =>
      nodes.command(input.node, request, {
        timeoutMs: input.timeoutMs ?? commandTimeoutMs,
        ...(input.signal ? { signal: input.signal } : {}),
      }),
    );
  }

  return {
    nodeCommand,
    resolveNode,
    async terminateSession(ref: SessionRef) {
      assertAccepting();
      validateSessionRef(ref);
      return onNode(() =>
        nodes.terminateSession(ref.node, {
          adapter: ref.adapter,
          target: ref.target,
          sessionId: ref.sessionId,
        }),
      );
    },
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
  };
}
