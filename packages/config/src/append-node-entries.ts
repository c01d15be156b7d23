// Adds adapter instances, providers and models[] entries for one node to an edge.yaml text by editing the YAML
// document (not re-rendering it), so the operator's comments and layout elsewhere stay as written — what
// `iop-edge node adopt` writes. Creates the node's entry (`{ id }`), `adapters.instances`, `providers` and the
// top-level `models` when missing; never changes an existing entry. Each added item may carry a comment (e.g. why
// its capacity is what it is). The caller validates the result (parseConfigText) before writing it.
import type { Document } from 'yaml';
import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { ConfigError } from './errors.js';

export interface CommentedEntry {
  readonly value: Readonly<Record<string, unknown>>;
  /** One comment line written above the entry; '' = none. */
  readonly comment: string;
}

export interface NodeEntries {
  readonly nodeId: string;
  readonly instances: readonly CommentedEntry[];
  readonly providers: readonly CommentedEntry[];
  readonly models: readonly CommentedEntry[];
}

export function appendNodeEntries(text: string, entries: NodeEntries): string {
  const document = parseDocument(text);
  if (document.errors.length > 0) {
    throw new ConfigError('invalid_argument', `not valid YAML: ${document.errors[0]?.message ?? ''}`);
  }
  if (document.contents === null)
    document.contents = document.createNode({}) as unknown as typeof document.contents;
  if (!isMap(document.contents)) throw new ConfigError('invalid_argument', 'the document is not a mapping');
  const root = document.contents as YAMLMap;
  const nodes = sequence(document, root, 'nodes', 'nodes');
  let node = nodes.items.find((item) => isMap(item) && item.get('id') === entries.nodeId) as
    YAMLMap | undefined;
  if (!node) {
    node = document.createNode({ id: entries.nodeId });
    nodes.add(node);
  }
  if (entries.instances.length > 0) {
    const adapters = mapping(document, node, 'adapters', `nodes[${entries.nodeId}].adapters`);
    const instances = sequence(
      document,
      adapters,
      'instances',
      `nodes[${entries.nodeId}].adapters.instances`,
    );
    for (const entry of entries.instances) instances.add(commented(document, entry));
  }
  if (entries.providers.length > 0) {
    const providers = sequence(document, node, 'providers', `nodes[${entries.nodeId}].providers`);
    for (const entry of entries.providers) providers.add(commented(document, entry));
  }
  if (entries.models.length > 0) {
    const models = sequence(document, root, 'models', 'models');
    for (const entry of entries.models) models.add(commented(document, entry));
  }
  return document.toString();
}

/** The entries alone, as the YAML an operator would add by hand (`node adopt --dry-run`). */
export function renderNodeEntries(entries: NodeEntries): string {
  return appendNodeEntries('', entries);
}

function commented(document: Document, entry: CommentedEntry): YAMLMap {
  const node = document.createNode({ ...entry.value }) as YAMLMap;
  if (entry.comment) node.commentBefore = ` ${entry.comment}`;
  return node;
}

function mapping(document: Document, parent: YAMLMap, key: string, path: string): YAMLMap {
  const existing = parent.get(key);
  if (isMap(existing)) return existing;
  if (existing !== undefined && existing !== null) {
    throw new ConfigError('invalid_argument', `${path} is not a mapping`);
  }
  const created = document.createNode({}) as YAMLMap;
  parent.set(key, created);
  return created;
}

function sequence(document: Document, parent: YAMLMap, key: string, path: string): YAMLSeq {
  const existing = parent.get(key);
  if (isSeq(existing)) {
    // `key: []` written in flow style would swallow the added block entries into one long line.
    if (existing.items.length === 0) existing.flow = false;
    return existing;
  }
  if (existing !== undefined && existing !== null) {
    throw new ConfigError('invalid_argument', `${path} is not a list`);
  }
  const created = document.createNode([]) as YAMLSeq;
  parent.set(key, created);
  return created;
}
