// The registry of connected nodes: at most one live NodeLink per node id, in connection order.
// The transport adds a link when a node is accepted and removes it when that connection ends; removal is keyed
// by the link itself so a late close of a replaced connection never evicts its replacement.
import type { NodeSummary } from '../present/node-summary.js';
import type { NodeLink } from './node-link.js';

export interface NodeRegistry {
  /** Adds the link; returns the link it replaced (same node id), which the caller must close. */
  add(link: NodeLink): NodeLink | undefined;
  /** Removes the link if it is still the current one for its node id. */
  remove(link: NodeLink): boolean;
  get(nodeId: string): NodeLink | undefined;
  /** Links whose alias equals `alias` (aliases are not guaranteed unique). */
  findByAlias(alias: string): NodeLink[];
  /** Live links, oldest connection first. */
  links(): NodeLink[];
  list(): NodeSummary[];
  readonly size: number;
}

export function createNodeRegistry(): NodeRegistry {
  const byId = new Map<string, NodeLink>();
  return {
    add(link) {
      const previous = byId.get(link.nodeId);
      // delete + set moves the node to the end: connection order reflects the live connection.
      byId.delete(link.nodeId);
      byId.set(link.nodeId, link);
      return previous === link ? undefined : previous;
    },
    remove(link) {
      if (byId.get(link.nodeId) !== link) return false;
      byId.delete(link.nodeId);
      return true;
    },
    get(nodeId) {
      return byId.get(nodeId);
    },
    findByAlias(alias) {
      return [...byId.values()].filter((link) => link.info.alias === alias);
    },
    links() {
      return [...byId.values()];
    },
    list() {
      return [...byId.values()].map((link) => link.summary());
    },
    get size() {
      return byId.size;
    },
  };
}
