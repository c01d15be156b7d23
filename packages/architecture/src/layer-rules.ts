// The layering rules of one source tree, checked over its import graph. A table gives each top-level entry of
// the tree (a folder or a file; a deeper path such as `adapters/http` may have a layer of its own, the longest
// matching path wins) a layer number: a module may import its own layer and those below it, never one above. A
// restricted group may import only its own entry and the entries it names (the edge's surfaces), or anything
// its layer allows except the entries it names (the service, which never reaches past placement). A relative
// import that leaves the tree (into another app's or a package's source) is never allowed: packages are
// imported by name.
import type { ImportEdge, ImportGraph } from './import-graph.js';

export interface RestrictedGroup {
  /** What the group is (in messages). */
  name: string;
  /** The entries in the group. */
  entries: readonly string[];
  /** The only entries (besides its own) a member may import; absent = any entry its layer allows. */
  mayImport?: readonly string[];
  /** Entries below it a member may still not import (a layer sealed behind an interface). */
  mayNotImport?: readonly string[];
}

export interface LayerTable {
  /** The tree, repo-relative (`apps/edge/src`). */
  root: string;
  /** Layer of each entry under the root (`service`, `main.ts`, `adapters/http`). Higher imports lower. */
  layers: Readonly<Record<string, number>>;
  restricted?: readonly RestrictedGroup[];
  /** Files outside the tree a module may still reach by a relative path (the app's own package.json). */
  allowOutside?: readonly string[];
}

export interface Violation {
  rule: 'unknown-module' | 'upward' | 'restricted' | 'leaves-tree';
  from: string;
  to: string;
  detail: string;
}

/** The entry a repo-relative path belongs to under `table.root` (longest key that is a prefix), or undefined. */
export function entryOf(table: LayerTable, file: string): string | undefined {
  if (!file.startsWith(`${table.root}/`)) return undefined;
  const inside = file.slice(table.root.length + 1);
  let best: string | undefined;
  for (const key of Object.keys(table.layers)) {
    const matches = inside === key || inside.startsWith(`${key}/`);
    if (matches && (best === undefined || key.length > best.length)) best = key;
  }
  return best;
}

/** The top-level name of a path inside a restricted group's tree (`surface-kit/run-starter.ts` → `surface-kit`). */
function topLevel(table: LayerTable, file: string): string {
  return file.slice(table.root.length + 1).split('/')[0];
}

export function checkLayering(graph: ImportGraph, table: LayerTable): Violation[] {
  const violations: Violation[] = [];
  const inTree = (file: string) => file.startsWith(`${table.root}/`);
  for (const module of graph.modules.filter(inTree)) {
    if (entryOf(table, module) === undefined) {
      violations.push({ rule: 'unknown-module', from: module, to: module, detail: 'no layer in the table' });
    }
  }
  const relative = graph.edges.filter(
    (edge): edge is ImportEdge & { kind: 'relative' } => edge.kind === 'relative' && inTree(edge.from),
  );
  for (const { from, to } of relative) {
    if (!inTree(to) && !(table.allowOutside ?? []).includes(to)) {
      violations.push({ rule: 'leaves-tree', from, to, detail: `imports outside ${table.root}` });
      continue;
    }
    if (!inTree(to)) continue;
    const fromEntry = entryOf(table, from);
    const toEntry = entryOf(table, to);
    if (fromEntry === undefined || toEntry === undefined) continue;
    const fromLayer = table.layers[fromEntry];
    const toLayer = table.layers[toEntry];
    if (toLayer > fromLayer) {
      violations.push({
        rule: 'upward',
        from,
        to,
        detail: `${fromEntry} (layer ${fromLayer}) imports ${toEntry} (layer ${toLayer})`,
      });
      continue;
    }
    for (const group of table.restricted ?? []) {
      const fromTop = topLevel(table, from);
      const toTop = topLevel(table, to);
      if (!group.entries.includes(fromTop) || fromTop === toTop) continue;
      const refusal = restrictedRefusal(group, toTop);
      if (refusal !== undefined) {
        violations.push({ rule: 'restricted', from, to, detail: `a ${group.name} (${fromTop}) ${refusal}` });
      }
    }
  }
  return violations;
}

/** Why a member of `group` may not import entry `toTop`; undefined = it may. */
function restrictedRefusal(group: RestrictedGroup, toTop: string): string | undefined {
  if (group.mayImport !== undefined && !group.mayImport.includes(toTop)) {
    return `may import only ${group.mayImport.join(', ')} and its own folder`;
  }
  if (group.mayNotImport?.includes(toTop)) return `may not import ${group.mayNotImport.join(', ')}`;
  return undefined;
}

/** `rule: from → to (detail)`, one line per violation, for readable test failures. */
export function describeViolations(violations: readonly Violation[]): string[] {
  return violations.map(({ rule, from, to, detail }) => `${rule}: ${from} → ${to} (${detail})`);
}
