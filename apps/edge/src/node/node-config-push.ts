// Pushes a changed node configuration to connected nodes (live config refresh), all or nothing.
//
// `pushNodeConfig` sends each connected node whose mapped payload revision differs from the one it runs a
// NodeConfigRefreshRequest, all in parallel, each bounded by a timeout; the result lists every configured or
// connected node. `createNodeConfigState` owns the node configs the edge hands out (the payload a registering
// node gets) and applies a refresh as a two-step transaction:
//
// 1. prepare: push the new payloads to every affected connected node and collect the acknowledgements;
// 2. all acknowledged (a node that is not connected, or that disconnects during the push, does not count: it
//    gets whatever payload is in force when it registers) → the caller's `commit` switches the edge's own state
//    and, in the same synchronous step, later registrations start getting the new payloads;
// 3. otherwise (a node refused, did not answer in time, or `commit` threw) → every node that acknowledged, and
//    every node that did not answer, is sent its previous payload again; the outcome is `rejected` and the edge
//    still hands out the previous payloads. The link orders frames, so a node that answers late applies the new
//    payload and then the previous one: it converges on the previous payload even if its answers are lost.
import type { NodeConfig } from '@iop/config';
import type { NodeConfigPayload } from '@iop/wire';
import { NodeLinkError } from './errors.js';
import { payloadForNode } from './mapper.js';
import type { NodeLink } from './node-link.js';
import type { NodeRegistry } from './node-registry.js';

/**
 * What one node made of a push: `applied` (acknowledged), `unchanged` (its payload did not change: nothing sent),
 * `failed` (it refused; it keeps its previous payload), `timeout` (no answer in time), `not_connected`,
 * `reverted` (acknowledged, then the refresh was rejected and it acknowledged its previous payload again),
 * `revert_failed` (acknowledged, but did not acknowledge its previous payload; it is sent the payload in force
 * at the next refresh, or gets it when it registers again).
 */
export type NodeRefreshStatus =
  'applied' | 'unchanged' | 'failed' | 'timeout' | 'not_connected' | 'reverted' | 'revert_failed';

export interface NodeRefreshResult {
  node_id: string;
  status: NodeRefreshStatus;
  /** Revision the node runs after the push ('' when not connected). */
  revision: string;
  error: string;
}

export async function pushNodeConfig(
  registry: NodeRegistry,
  nodes: readonly NodeConfig[],
  options: { timeoutMs?: number } = {},
): Promise<NodeRefreshResult[]> {
  const links = registry.links();
  const connected = new Set(links.map((link) => link.nodeId));
  const pushes = links.map(async (link): Promise<NodeRefreshResult> => {
    const payload = payloadForNode(nodes, link.nodeId);
    if (payload.revision === link.payload.revision) {
      return { node_id: link.nodeId, status: 'unchanged', revision: payload.revision, error: '' };
    }
    return sendPayload(link, payload, options.timeoutMs);
  });
  const results = await Promise.all(pushes);
  for (const node of nodes) {
    if (!connected.has(node.id))
      results.push({ node_id: node.id, status: 'not_connected', revision: '', error: '' });
  }
  return results.sort((left, right) => left.node_id.localeCompare(right.node_id));
}

async function sendPayload(
  link: NodeLink,
  payload: NodeConfigPayload,
  timeoutMs: number | undefined,
): Promise<NodeRefreshResult> {
  try {
    const result = await link.refreshConfig(payload, timeoutMs ? { timeoutMs } : {});
    return result.ok
      ? { node_id: link.nodeId, status: 'applied', revision: payload.revision, error: '' }
      : {
          node_id: link.nodeId,
          status: 'failed',
          revision: link.payload.revision,
          error: result.error || 'the node refused the configuration',
        };
  } catch (error) {
    return {
      node_id: link.nodeId,
      status: failureStatus(error),
      revision: link.payload.revision,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

function failureStatus(error: unknown): NodeRefreshStatus {
  if (!(error instanceof NodeLinkError)) return 'failed';
  if (error.code === 'request_timeout') return 'timeout';
  return error.code === 'link_closed' ? 'not_connected' : 'failed';
}

export interface NodeConfigApplyOptions {
  /** Bound on each node's acknowledgement (prepare and revert each). */
  timeoutMs?: number;
  /**
   * Switches the edge's own state to the new config. Called synchronously only when every pushed node
   * acknowledged; if it throws, the nodes are reverted and the outcome is `rejected` with its message.
   */
  commit?: () => void;
}

export interface NodeConfigApplyOutcome {
  status: 'applied' | 'rejected';
  /** Every configured or connected node, sorted by id (see NodeRefreshStatus). */
  results: NodeRefreshResult[];
  /** Why the edge itself could not switch (commit threw); '' otherwise. */
  error: string;
}

/** The node configs in force on the edge: what registering nodes get, and how a refresh changes them. */
export interface NodeConfigState {
  /** The payload a node registering now gets. */
  payloadFor(nodeId: string): NodeConfigPayload;
  /** The configured nodes in force. */
  nodes(): readonly NodeConfig[];
  /** Applies `next` all or nothing (see the module header). */
  apply(next: readonly NodeConfig[], options?: NodeConfigApplyOptions): Promise<NodeConfigApplyOutcome>;
}

export function createNodeConfigState(
  registry: NodeRegistry,
  initial: readonly NodeConfig[],
): NodeConfigState {
  let current = initial;

  async function apply(
    next: readonly NodeConfig[],
    options: NodeConfigApplyOptions = {},
  ): Promise<NodeConfigApplyOutcome> {
    const previous = current;
    const prepared = await pushNodeConfig(registry, next, options);
    let error = '';
    if (!prepared.some(isRefusal)) {
      try {
        options.commit?.();
        current = next;
      } catch (caught) {
        error = `the edge could not switch to the new configuration: ${describe(caught)}`;
      }
      if (!error) {
        // A node that registered while the push was out got the previous payload: send it the new one now.
        const late = await pushNodeConfig(registry, next, options);
        return { status: 'applied', results: mergeLate(prepared, late), error: '' };
      }
    }
    const results = await Promise.all(
      prepared.map((result) => revertNode(registry, previous, result, options.timeoutMs)),
    );
    return { status: 'rejected', results, error };
  }

  return {
    payloadFor: (nodeId) => payloadForNode(current, nodeId),
    nodes: () => current,
    apply,
  };
}

function isRefusal(result: NodeRefreshResult): boolean {
  return result.status === 'failed' || result.status === 'timeout';
}

/** Sends a node that acknowledged (or did not answer) its previous payload again. */
async function revertNode(
  registry: NodeRegistry,
  previous: readonly NodeConfig[],
  result: NodeRefreshResult,
  timeoutMs: number | undefined,
): Promise<NodeRefreshResult> {
  if (result.status !== 'applied' && result.status !== 'timeout') return result;
  const link = registry.get(result.node_id);
  if (!link) {
    return result.status === 'applied'
      ? {
          ...result,
          status: 'not_connected',
          revision: '',
          error:
            'disconnected before the refresh was reverted; it gets the previous payload when it registers',
        }
      : result;
  }
  const payload = payloadForNode(previous, result.node_id);
  const answer = await sendPayload(link, payload, timeoutMs);
  if (result.status === 'timeout') {
    const note =
      answer.status === 'applied'
        ? 'then acknowledged its previous payload'
        : `its previous payload was sent again (${answer.status}${answer.error ? `: ${answer.error}` : ''})`;
    return { ...result, revision: answer.revision, error: `${result.error}; ${note}` };
  }
  return answer.status === 'applied'
    ? { ...result, status: 'reverted', revision: payload.revision, error: '' }
    : {
        ...result,
        status: 'revert_failed',
        revision: link.payload.revision,
        error: `previous payload not acknowledged (${answer.status}${answer.error ? `: ${answer.error}` : ''})`,
      };
}

/** The prepare results, with any node the second push actually reached in place of its earlier entry. */
function mergeLate(prepared: NodeRefreshResult[], late: NodeRefreshResult[]): NodeRefreshResult[] {
  const byId = new Map(prepared.map((result) => [result.node_id, result]));
  for (const result of late) {
    if (result.status === 'unchanged' || result.status === 'not_connected') {
      if (!byId.has(result.node_id)) byId.set(result.node_id, result);
      continue;
    }
    byId.set(result.node_id, result);
  }
  return [...byId.values()].sort((left, right) => left.node_id.localeCompare(right.node_id));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
