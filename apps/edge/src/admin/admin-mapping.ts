// Conversions between the admin API's protobuf messages and the edge's service/event types. Pure functions.
import {
  AdminEdgeEvent,
  NodeInfo,
  ProviderStatus,
  SubmitRunEvent,
  toWireRunEvent,
  type SubmitRunRequest,
} from '@iop/wire';
import type { EdgeEvent } from '../events/types.js';
import { toWireDiscovery } from '../present/node-discovered.js';
import type {
  AgentRunView,
  NodeSummary,
  RunDestination,
  RunEventWithMeta,
  RunSpec,
} from '../service/types.js';

/**
 * A provider as the pool sees it: the node's last probe (health_detail, health_cause) is the node's to report;
 * the resident fields are absent in views that predate them (unknown).
 */
export type PooledProviderStatus = Omit<
  ProviderStatus,
  'healthDetail' | 'healthCause' | 'residentModels' | 'residentState'
> &
  Partial<Pick<ProviderStatus, 'residentModels' | 'residentState'>>;

/**
 * A connected node as NodeInfo. Its providers carry the pool's view (status, capacity, in-flight...) when the
 * pool knows the provider, otherwise only the health the node reported. Providers the pool has on this node that
 * the node never reported (its health probes are off, or no report arrived yet) follow, with the pool's health.
 */
export function toNodeInfo(
  node: NodeSummary,
  poolStatus: readonly PooledProviderStatus[],
  /** This edge's agent runs (any node's: those on this node are taken). */
  agentRuns: readonly AgentRunView[] = [],
): NodeInfo {
  return NodeInfo.fromPartial({
    agentRuns: agentRuns
      .filter((run) => run.nodeId === node.nodeId)
      .map((run) => ({
        runId: run.runId,
        principal: run.principal,
        model: run.model,
        liveChildren: run.liveChildren,
        children: run.children,
        tokens: run.tokens,
        childTokens: run.childTokens,
      })),
    nodeId: node.nodeId,
    alias: node.alias,
    agentVersion: node.agentVersion,
    os: node.os,
    arch: node.arch,
    hostname: node.hostname,
    remoteAddress: node.remoteAddress,
    connectedSinceUnixMs: node.connectedSinceUnixMs,
    lastHeartbeatUnixMs: node.lastHeartbeatUnixMs,
    adapters: [...node.adapters],
    ...(node.discovered ? { discovered: toWireDiscovery(node.discovered) } : {}),
    ...(node.edgeId ? { edgeId: node.edgeId } : {}),
    ...(node.identityFingerprint ? { identityFingerprint: node.identityFingerprint } : {}),
    providers: [
      ...node.providers.map((provider) => {
        const pooled = poolStatus.find(
          (candidate) => candidate.providerId === provider.providerId && candidate.nodeId === node.nodeId,
        );
        // The node reports its probe; an open or half-open circuit (the pool's passive health) overrides it.
        const circuit =
          pooled?.health === 'open' || pooled?.health === 'half_open' ? pooled.health : undefined;
        const reported = {
          health: circuit ?? provider.health,
          healthDetail: provider.detail,
          healthCause: provider.cause,
        };
        return pooled
          ? ProviderStatus.fromPartial({ ...pooled, ...reported })
          : ProviderStatus.fromPartial({ providerId: provider.providerId, nodeId: node.nodeId, ...reported });
      }),
      ...poolStatus
        .filter(
          (pooled) =>
            pooled.nodeId === node.nodeId &&
            !node.providers.some((reported) => reported.providerId === pooled.providerId),
        )
        .map((pooled) => ProviderStatus.fromPartial(pooled)),
    ],
  });
}

/** SubmitRunRequest → service input. Empty proto3 strings mean "not set". */
/**
 * An admin SubmitRun as a service submission: an explicit route (node, adapter, target) with a fixed session. The
 * request's `provider_id` is not honoured: admission takes the capacity of the provider that matches the route.
 */
export function toSubmission(
  request: SubmitRunRequest,
): { destination: RunDestination; spec: RunSpec } | undefined {
  const run = request.run;
  if (!run) return undefined;
  return {
    destination: {
      kind: 'route',
      ...(request.node ? { node: request.node } : {}),
      adapter: run.adapter,
      target: run.target,
    },
    spec: {
      session: { kind: 'fixed', sessionId: run.sessionId },
      background: run.background,
      workspace: run.workspace || undefined,
      messages: run.messages,
      tools: run.tools,
      toolChoiceJson: run.toolChoiceJson || undefined,
      params: run.params,
      timeoutMs: run.timeoutMs || undefined,
      metadata: run.metadata,
      runId: run.runId || undefined,
    },
  };
}

export function toSubmitRunEvent(event: RunEventWithMeta): SubmitRunEvent {
  return SubmitRunEvent.fromPartial({
    nodeId: event.nodeId,
    event: toWireRunEvent(event.runId, event.seq, event.part, event.atUnixMs),
  });
}

export function toAdminEdgeEvent(event: EdgeEvent): AdminEdgeEvent {
  switch (event.type) {
    case 'node':
      return AdminEdgeEvent.fromPartial({
        event: {
          $case: 'node',
          node: {
            nodeId: event.event.nodeId,
            alias: event.event.alias,
            kind: event.event.kind,
            reason: event.event.reason,
            atUnixMs: event.event.atUnixMs,
          },
        },
      });
    case 'run':
      return { event: { $case: 'run', run: toSubmitRunEvent(event.event) } };
    default: {
      const unreachable: never = event;
      throw new Error(`unknown edge event ${JSON.stringify(unreachable)}`);
    }
  }
}
