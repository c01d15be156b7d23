// The EdgeAdmin RPC handlers: each one translates a gRPC call into service / event-bus calls. Authentication,
// error mapping (grpc-status.ts) and stream bookkeeping are applied uniformly here, so every RPC behaves alike.
//
// Streams: SubmitRun and WatchEvents honour backpressure (they wait for 'drain'), stop when the client cancels
// (a cancelled SubmitRun cancels its run) and are all ended by `closeStreams()` when the server shuts down.
import {
  Metadata,
  status,
  type handleServerStreamingCall,
  type handleUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  type ServerUnaryCall,
} from '@grpc/grpc-js';
import {
  CancelRunResponse,
  GetUsageResponse,
  ListNodesResponse,
  ListProvidersResponse,
  TerminateSessionResponse,
  type AdminEdgeEvent,
  type EdgeAdminServer,
  type WatchEventsRequest,
  type RefreshConfigResponse,
} from '@iop/wire';
import type { AdminKeyConfig } from '@iop/config';
import { createAdminCallGuard } from './admin-call-guard.js';
import type { EventBus } from '../events/types.js';
import { USAGE_GROUPS, type UsageGroup, type UsageQuery, type UsageRow } from '../governance/usage-store.js';
import type { Logger } from '../logging.js';
import type { EdgeService, RunHandle } from '../service/types.js';
import {
  toAdminEdgeEvent,
  toNodeInfo,
  toSubmitRunEvent,
  toSubmission,
  type PooledProviderStatus,
} from './admin-mapping.js';
import { AdminCallError, toGrpcStatus } from './grpc-status.js';
import type { HostGuard } from '../http/host-guard.js';

/** Applies (or dry-runs) a candidate config; the live-refresh feature provides it. */
export type RefreshHandler = (
  mode: string,
  configYaml: string,
  configPath: string,
) => Promise<RefreshConfigResponse>;

export interface AdminHandlerDeps {
  service: EdgeService;
  events: EventBus;
  logger: Logger;
  /** Provider pool status for ListProviders / NodeInfo; none = no providers known. */
  providerStatus?: () => PooledProviderStatus[];
  /**
   * Config refresh, looked up on every call (the refresh feature may register it after the server started);
   * none (or `refreshEnabled: false`) = RefreshConfig answers UNAVAILABLE.
   */
  refreshHandler?: () => RefreshHandler | undefined;
  refreshEnabled?: boolean;
  /** Usage totals (GetUsage); none = GetUsage answers UNAVAILABLE. */
  usage?: (query: UsageQuery) => UsageRow[] | Promise<UsageRow[]>;
  /** Required bearer token (an operator key); '' or undefined = none. */
  token?: string;
  /** Named keys with a role (`refresh.admin_keys`); with neither keys nor token the API is open (loopback). */
  keys?: readonly AdminKeyConfig[];
  /**
   * The listener's `:authority` check (http/host-guard.ts) and the port it is bound to: a call naming another host
   * is refused (PERMISSION_DENIED `host_not_allowed`) before its credentials are looked at. None = unchecked.
   */
  authority?: { guard: HostGuard; port: () => number };
}

export interface AdminHandlers {
  implementation: EdgeAdminServer;
  /** Ends every open stream (server shutdown). */
  closeStreams(): void;
  /** Open SubmitRun + WatchEvents streams (tests). */
  readonly openStreams: number;
}

export const DROPPED_EVENTS_TRAILER = 'iop-dropped-events';

export function createAdminHandlers(deps: AdminHandlerDeps): AdminHandlers {
  const { service, events, logger } = deps;
  const guard = createAdminCallGuard(deps);
  const streams = new Set<AbortController>();

  function unary<Request, Response>(
    name: string,
    handler: (request: Request, call: ServerUnaryCall<Request, Response>) => Promise<Response> | Response,
  ): handleUnaryCall<Request, Response> {
    return (call: ServerUnaryCall<Request, Response>, callback: sendUnaryData<Response>) => {
      const refused = guard(name, call.getHost(), call.metadata);
      if (refused) {
        logger.warn({ rpc: name, peer: call.getPeer(), code: refused.errorCode }, 'admin call rejected');
        callback(toGrpcStatus(refused));
        return;
      }
      Promise.resolve()
        .then(() => handler(call.request, call))
        .then(
          (response) => callback(null, response),
          (error: unknown) => {
            logger.debug({ rpc: name, error: describe(error) }, 'admin call failed');
            callback(toGrpcStatus(error));
          },
        );
    };
  }

  function streaming<Request, Response>(
    name: string,
    handler: (
      call: ServerWritableStream<Request, Response>,
      signal: AbortSignal,
    ) => Promise<Metadata | undefined>,
  ): handleServerStreamingCall<Request, Response> {
    return (call: ServerWritableStream<Request, Response>) => {
      const refused = guard(name, call.getHost(), call.metadata);
      if (refused) {
        logger.warn({ rpc: name, peer: call.getPeer(), code: refused.errorCode }, 'admin call rejected');
        call.emit('error', toGrpcStatus(refused));
        return;
      }
      const controller = new AbortController();
      streams.add(controller);
      const onCancelled = (): void => controller.abort(new Error('client cancelled'));
      call.on('cancelled', onCancelled);
      handler(call, controller.signal)
        .then(
          (trailers) => {
            if (call.cancelled) return;
            // Ended by closeStreams(): tell the client why instead of a plain OK.
            const reason: unknown = controller.signal.reason;
            if (reason instanceof AdminCallError) call.emit('error', toGrpcStatus(reason));
            else call.end(trailers);
          },
          (error: unknown) => {
            logger.debug({ rpc: name, error: describe(error) }, 'admin stream failed');
            if (!call.cancelled) call.emit('error', toGrpcStatus(error));
          },
        )
        .finally(() => {
          call.off('cancelled', onCancelled);
          streams.delete(controller);
        });
    };
  }

  const implementation: EdgeAdminServer = {
    listNodes: unary('ListNodes', () => {
      const pool = deps.providerStatus?.() ?? [];
      const agentRuns = service.agentRuns();
      return ListNodesResponse.fromPartial({
        nodes: service.fabricNodes().map((node) => toNodeInfo(node, pool, agentRuns)),
      });
    }),

    listProviders: unary('ListProviders', () => providersResponse(service, deps.providerStatus?.() ?? [])),

    submitRun: streaming('SubmitRun', async (call, signal) => {
      const submission = toSubmission(call.request);
      if (!submission)
        throw new AdminCallError(status.INVALID_ARGUMENT, 'invalid_request', 'run is required');
      // The signal is the run's cancel path: a client that goes away cancels the run (the service owns it).
      const handle = await service.submitRun(submission.destination, submission.spec, {
        surface: 'admin',
        signal,
      });
      try {
        await relay(call, handle, signal);
      } catch (error) {
        // A stream that failed for another reason than the client leaving must not leave the run unobserved.
        handle.cancel('admin stream failed').catch(() => undefined);
        throw error;
      }
      return undefined;
    }),

    cancelRun: unary('CancelRun', async (request) => {
      if (!request.runId)
        throw new AdminCallError(status.INVALID_ARGUMENT, 'invalid_request', 'run_id is required');
      return CancelRunResponse.fromPartial({
        found: await service.cancelRun(request.runId, 'cancelled by admin API'),
      });
    }),

    terminateSession: unary('TerminateSession', async (request) => {
      const nodeId = await service.terminateSession({
        node: request.node || undefined,
        adapter: request.adapter,
        target: request.target,
        sessionId: request.sessionId,
      });
      return TerminateSessionResponse.fromPartial({ nodeId });
    }),

    nodeCommand: unary('NodeCommand', (request) => {
      if (!request.command?.command) {
        throw new AdminCallError(status.INVALID_ARGUMENT, 'invalid_request', 'command is required');
      }
      return service.nodeCommand({ node: request.node || undefined, request: request.command });
    }),

    watchEvents: streaming('WatchEvents', (call, signal) => watchEvents(events, call, signal, logger)),

    refreshConfig: unary('RefreshConfig', (request) => {
      const handler = deps.refreshEnabled === false ? undefined : deps.refreshHandler?.();
      if (!handler)
        throw new AdminCallError(status.UNAVAILABLE, 'refresh_disabled', 'config refresh is disabled');
      return handler(request.mode, request.configYaml, request.configPath);
    }),

    getUsage: unary('GetUsage', (request) => usageResponse(deps.usage, request.by, request.sinceUnixMs)),
  };

  return {
    implementation,
    closeStreams() {
      const reason = new AdminCallError(
        status.UNAVAILABLE,
        'shutting_down',
        'the edge admin API is shutting down',
      );
      for (const controller of streams) controller.abort(reason);
    },
    get openStreams() {
      return streams.size;
    },
  };
}

/** Writes one message, waiting for 'drain' when the client reads slower than we produce. */
async function write<T>(
  call: ServerWritableStream<unknown, T>,
  message: T,
  signal: AbortSignal,
): Promise<void> {
  if (call.write(message)) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.on('drain', done);
    call.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** ListProviders: each provider with the node's last probe of it (detail and cause), when its node reported one. */
function providersResponse(
  service: Pick<EdgeService, 'fabricNodes'>,
  pool: readonly PooledProviderStatus[],
): ListProvidersResponse {
  const reported = new Map<string, { healthDetail: string; healthCause: string }>();
  for (const node of service.fabricNodes()) {
    for (const entry of node.providers) {
      reported.set(`${node.nodeId}\n${entry.providerId}`, {
        healthDetail: entry.detail,
        healthCause: entry.cause,
      });
    }
  }
  return ListProvidersResponse.fromPartial({
    providers: pool.map((provider) => ({
      ...provider,
      ...reported.get(`${provider.nodeId}\n${provider.providerId}`),
    })),
  });
}

/** WatchEvents: the bus's events (run events only when asked) until the client goes; the dropped count as trailer. */
async function watchEvents(
  events: EventBus,
  call: ServerWritableStream<WatchEventsRequest, AdminEdgeEvent>,
  signal: AbortSignal,
  logger: Logger,
): Promise<Metadata> {
  const subscription = events.subscribe({ signal });
  const includeRuns = call.request.includeRunEvents;
  let reported = 0;
  try {
    for await (const event of subscription) {
      if (signal.aborted) break;
      if (subscription.dropped > reported) {
        logger.warn(
          { dropped: subscription.dropped - reported },
          'admin event watcher fell behind; events dropped',
        );
        reported = subscription.dropped;
      }
      if (event.type === 'run' && !includeRuns) continue;
      await write(call, toAdminEdgeEvent(event), signal);
    }
  } finally {
    subscription.close();
  }
  const trailers = new Metadata();
  trailers.set(DROPPED_EVENTS_TRAILER, String(subscription.dropped));
  return trailers;
}

/** GetUsage: the recorded usage grouped by `by` (default key) since `sinceMs`. */
async function usageResponse(
  usage: AdminHandlerDeps['usage'],
  requested: string,
  sinceMs: number,
): Promise<GetUsageResponse> {
  if (!usage) throw new AdminCallError(status.UNAVAILABLE, 'usage_disabled', 'usage is not recorded');
  const by = requested === '' ? 'key' : requested;
  if (!(USAGE_GROUPS as readonly string[]).includes(by)) {
    throw new AdminCallError(
      status.INVALID_ARGUMENT,
      'invalid_request',
      `by must be one of ${USAGE_GROUPS.join(', ')}, not '${by}'`,
    );
  }
  const rows = await usage({ by: by as UsageGroup, sinceMs });
  return GetUsageResponse.fromPartial({
    groups: rows.map((row) => ({
      group: row.group,
      runs: row.runs,
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      completed: row.outcomes.completed,
      errors: row.outcomes.error,
      cancelled: row.outcomes.cancelled,
      rejected: row.outcomes.rejected,
      queueMsTotal: row.queueMsTotal,
      durationMsTotal: row.durationMsTotal,
    })),
  });
}

/** Streams a run's events to the client until the run ends or the client goes away. */
async function relay(
  call: ServerWritableStream<unknown, unknown>,
  handle: RunHandle,
  signal: AbortSignal,
): Promise<void> {
  for await (const event of handle.events) {
    if (signal.aborted) break;
    await write(call, toSubmitRunEvent(event), signal);
  }
}
