// Pushes a changed node configuration to connected nodes (live config refresh): each connected node whose mapped
// payload revision differs from the one it runs gets a NodeConfigRefreshRequest, all in parallel, each bounded by
// a timeout. The result lists every configured or connected node, so an operator sees who applied what.
// A node that does not answer in time is `timeout`; one that disconnects during the push is `not_connected`
// (it gets the new payload when it registers again).
import type { NodeConfig } from '@iop/config';
import { NodeLinkError } from './errors.js';
import { payloadForNode } from './mapper.js';
import type { NodeRegistry } from './node-registry.js';

export type NodeRefreshStatus = 'applied' | 'unchanged' | 'failed' | 'timeout' | 'not_connected';

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
    try {
      const result = await link.refreshConfig(payload, {
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
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
  });
  const results = await Promise.all(pushes);
  for (const node of nodes) {
    if (!connected.has(node.id))
      results.push({ node_id: node.id, status: 'not_connected', revision: '', error: '' });
  }
  return results.sort((left, right) => left.node_id.localeCompare(right.node_id));
}

function failureStatus(error: unknown): NodeRefreshStatus {
  if (!(error instanceof NodeLinkError)) return 'failed';
  if (error.code === 'request_timeout') return 'timeout';
  return error.code === 'link_closed' ? 'not_connected' : 'failed';
}
