// The pool as the dashboard shows it: each provider's status with the node's own report of its last probe, and in
// cluster mode each edge's share of nodes, capacity, in-flight and queued runs.
import type { UiClusterEdge, UiProvider } from '@iop/ui-api';
import type { EdgeService } from '../service/types.js';

export function providerViews(service: Pick<EdgeService, 'listNodes' | 'providers'>): UiProvider[] {
  // The node's own report of each provider (detail and cause of its last probe), by node and provider id.
  const reported = new Map<string, { detail: string; cause: string }>();
  for (const node of service.listNodes()) {
    for (const entry of node.providers) reported.set(`${node.nodeId}\n${entry.providerId}`, entry);
  }
  return service.providers().map((provider) => {
    const report = reported.get(`${provider.nodeId}\n${provider.providerId}`);
    return {
      provider_id: provider.providerId,
      node_id: provider.nodeId,
      status: provider.status,
      health: provider.health,
      health_detail: report?.detail ?? '',
      health_cause: report?.cause ?? '',
      capacity: provider.capacity,
      in_flight: provider.inFlight,
      queued: provider.queued,
      priority: provider.priority,
      served_models: [...provider.servedModels],
      resident_models: [...(provider.residentModels ?? [])],
      resident_state: provider.residentState ?? 'unknown',
    };
  });
}

/** Cluster mode: per-edge figures from the cluster-wide pool and where each node is connected. */
export function clusterEdgeViews(
  service: Pick<EdgeService, 'fabricNodes'>,
  providers: readonly UiProvider[],
): UiClusterEdge[] {
  const edgeOf = new Map(service.fabricNodes().map((node) => [node.nodeId, node.edgeId ?? '']));
  const edges = new Map<string, UiClusterEdge>();
  const edge = (edgeId: string): UiClusterEdge => {
    let entry = edges.get(edgeId);
    if (!entry) {
      entry = { edge_id: edgeId, nodes: 0, capacity: 0, in_flight: 0, queued: 0 };
      edges.set(edgeId, entry);
    }
    return entry;
  };
  for (const edgeId of edgeOf.values()) edge(edgeId).nodes += 1;
  for (const provider of providers) {
    const edgeId = edgeOf.get(provider.node_id);
    if (edgeId === undefined) continue;
    const entry = edge(edgeId);
    entry.capacity += provider.capacity;
    entry.in_flight += provider.in_flight;
    entry.queued += provider.queued;
  }
  return [...edges.values()].sort((a, b) => a.edge_id.localeCompare(b.edge_id));
}

/** Pool rejections by model: queue full / queue timeout answer 429, no provider 503 (as the OpenAI API does). */
export function rejectionTable(
  samples: { model: string; reason: string; value: number }[],
): Map<string, { r429: number; r503: number }> {
  const table = new Map<string, { r429: number; r503: number }>();
  for (const sample of samples) {
    const row = table.get(sample.model) ?? { r429: 0, r503: 0 };
    if (sample.reason === 'queue_full' || sample.reason === 'queue_timeout') row.r429 += sample.value;
    else row.r503 += sample.value;
    table.set(sample.model, row);
  }
  return table;
}
