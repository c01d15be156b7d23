// Node labels as the console and the ops dashboard show them: `node<i>`, where i is the node's position in the
// order the viewer first saw the node connect (the first node seen is node0). Nodes already connected when the
// viewer starts are numbered first, by their connection time. A label never changes during the viewer's lifetime:
// a node that disconnects and comes back keeps its label, and labels are never reused for another node id.

export class NodeLabels {
  private readonly indexes = new Map<string, number>();

  /** The node's label, assigning the next index when this node id is new to the console. */
  labelFor(nodeId: string): string {
    let index = this.indexes.get(nodeId);
    if (index === undefined) {
      index = this.indexes.size;
      this.indexes.set(nodeId, index);
    }
    return `node${index}`;
  }

  /** Position in connection order, for listing nodes in the order their labels were given. */
  indexOf(nodeId: string): number | undefined {
    return this.indexes.get(nodeId);
  }
}
