// The result of a config refresh, as the admin API returns it and `iop-edge config refresh --json` prints it:
// `{status, mode, changed_nodes[], changed_providers[], changed_models[], reports[{path, change, class, reason}],
// node_results[{node_id, status, error}]}`. Every array is always present. Also the mapping to and from the
// RefreshConfigResponse protobuf message and the CLI's exit code for a result.
import type { RefreshChange, RefreshClass, RefreshReport, RefreshStatus } from '@iop/config';
import { RefreshConfigResponse } from '@iop/wire';

/**
 * What one node made of the pushed payload: `applied` (acknowledged), `failed` (the node refused it, `error`
 * says why; it keeps its previous payload), `timeout` (no acknowledgement in time; it was sent its previous
 * payload again), `not_connected` (the node is not connected; it gets the payload in force when it registers),
 * `reverted` (it acknowledged, the refresh was rejected because of another node, and it acknowledged its
 * previous payload again), `revert_failed` (it acknowledged but did not take its previous payload back).
 */
export type NodeResultStatus =
  'applied' | 'failed' | 'timeout' | 'not_connected' | 'reverted' | 'revert_failed';
export const NODE_RESULT_STATUSES: readonly NodeResultStatus[] = [
  'applied',
  'failed',
  'timeout',
  'not_connected',
  'reverted',
  'revert_failed',
];

export interface RefreshNodeOutcome {
  node_id: string;
  status: NodeResultStatus;
  error: string;
}

export interface RefreshResult {
  status: RefreshStatus;
  mode: string;
  changed_nodes: string[];
  changed_providers: string[];
  changed_models: string[];
  reports: RefreshReport[];
  node_results: RefreshNodeOutcome[];
}

const STATUSES: readonly RefreshStatus[] = ['applied', 'restart_required', 'rejected'];
const CHANGES: readonly RefreshChange[] = ['added', 'removed', 'modified'];
const CLASSES: readonly RefreshClass[] = ['live', 'restart', 'invalid'];

/** Exit codes of `iop-edge config refresh`. */
export const REFRESH_EXIT = { applied: 0, rejected: 1, restart_required: 3 } as const;

export function refreshExitCode(result: Pick<RefreshResult, 'status'>): number {
  return REFRESH_EXIT[result.status];
}

export function toRefreshConfigResponse(result: RefreshResult): RefreshConfigResponse {
  return RefreshConfigResponse.fromPartial({
    status: result.status,
    mode: result.mode,
    changedNodes: [...result.changed_nodes],
    changedProviders: [...result.changed_providers],
    changedModels: [...result.changed_models],
    reports: result.reports.map((report) => ({ ...report })),
    nodeResults: result.node_results.map((node) => ({
      nodeId: node.node_id,
      status: node.status,
      error: node.error,
    })),
  });
}

/** The edge's answer as a RefreshResult; an answer outside the documented vocabulary is a clear error. */
export function fromRefreshConfigResponse(response: RefreshConfigResponse): RefreshResult {
  return {
    status: oneOf(response.status, STATUSES, 'status'),
    mode: response.mode,
    changed_nodes: [...response.changedNodes],
    changed_providers: [...response.changedProviders],
    changed_models: [...response.changedModels],
    reports: response.reports.map((report) => ({
      path: report.path,
      change: oneOf(report.change, CHANGES, 'reports[].change'),
      class: oneOf(report.class, CLASSES, 'reports[].class'),
      reason: report.reason,
    })),
    node_results: response.nodeResults.map((node) => ({
      node_id: node.nodeId,
      status: oneOf(node.status, NODE_RESULT_STATUSES, 'node_results[].status'),
      error: node.error,
    })),
  };
}

function oneOf<T extends string>(value: string, allowed: readonly T[], field: string): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`the edge answered an unknown refresh ${field} '${value}'`);
}
