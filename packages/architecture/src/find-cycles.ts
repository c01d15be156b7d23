// Import cycles: the strongly connected components of a module graph with more than one module (or a module that
// imports itself), found with Tarjan's algorithm. Each cycle is reported as its modules, sorted.

export interface GraphEdge {
  from: string;
  to: string;
}

export function findCycles(edges: readonly GraphEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    const targets = next.get(from) ?? [];
    targets.push(to);
    next.set(from, targets);
    if (!next.has(to)) next.set(to, []);
  }
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;

  // Iterative depth-first search (a deep import chain must not overflow the call stack).
  for (const start of next.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; childIndex: number }[] = [{ node: start, childIndex: 0 }];
    index.set(start, counter);
    lowLink.set(start, counter);
    counter += 1;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const children = next.get(frame.node)!;
      if (frame.childIndex < children.length) {
        const child = children[frame.childIndex];
        frame.childIndex += 1;
        if (!index.has(child)) {
          index.set(child, counter);
          lowLink.set(child, counter);
          counter += 1;
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, childIndex: 0 });
        } else if (onStack.has(child)) {
          lowLink.set(frame.node, Math.min(lowLink.get(frame.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) lowLink.set(parent.node, Math.min(lowLink.get(parent.node)!, lowLink.get(frame.node)!));
      if (lowLink.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfImport = component.length === 1 && children.includes(frame.node);
        if (component.length > 1 || selfImport) cycles.push(component.sort());
      }
    }
  }
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}
