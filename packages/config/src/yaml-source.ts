// Parses edge.yaml text with the `yaml` package, keeping the document so any issue path can be mapped back to
// the line it came from. Syntax errors (including duplicate keys) become issues; nothing here throws.
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type Node,
} from 'yaml';
import type { PathSegment } from './config-path.js';
import type { ConfigIssue } from './types.js';

/** Refuse absurdly large inputs before parsing: a real edge.yaml is a few KiB. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

export interface YamlSource {
  /** The document as plain data; `{}` for an empty document. */
  readonly data: unknown;
  /** 1-based line of the value at `path` (or of its key when `key` is set), else of the nearest ancestor. */
  lineOf(path: readonly PathSegment[], options?: { key?: boolean }): number | undefined;
}

export type YamlParseResult =
  { readonly ok: true; readonly source: YamlSource } | { readonly ok: false; readonly issues: ConfigIssue[] };

export function parseYamlSource(text: string, sourceName: string): YamlParseResult {
  if (Buffer.byteLength(text, 'utf8') > MAX_CONFIG_BYTES) {
    return {
      ok: false,
      issues: [
        { path: '', code: 'too_large', message: `${sourceName} is larger than ${MAX_CONFIG_BYTES} bytes` },
      ],
    };
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, merge: true, prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    return {
      ok: false,
      issues: document.errors.map((error) => ({
        path: '',
        line: error.linePos?.[0].line,
        code: 'yaml_syntax',
        message: `invalid YAML: ${firstLine(error.message)}`,
      })),
    };
  }
  let data: unknown;
  try {
    data = document.toJS({ maxAliasCount: 1000 }) as unknown;
  } catch (error) {
    return {
      ok: false,
      issues: [{ path: '', code: 'yaml_syntax', message: `invalid YAML: ${firstLine(errorMessage(error))}` }],
    };
  }
  return {
    ok: true,
    source: {
      data: dropNullEntries(data ?? {}),
      lineOf: (path, options) => lineOf(document, lineCounter, path, options?.key ?? false),
    },
  };
}

function lineOf(
  document: Document,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  key: boolean,
): number | undefined {
  let current: Node | null = resolve(document, document.contents);
  let best = lineAt(lineCounter, current);
  for (let index = 0; index < path.length && current; index += 1) {
    const segment = path[index];
    let next: Node | null = null;
    let keyNode: Node | null = null;
    if (isMap(current)) {
      const pair = current.items.find(
        (item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (pair) {
        next = resolve(document, (pair.value as Node | null) ?? null);
        keyNode = pair.key as Node;
      }
    } else if (isSeq(current) && typeof segment === 'number') {
      next = resolve(document, (current.items[segment] as Node | undefined) ?? null);
    }
    if (!next && !keyNode) break;
    const isLast = index === path.length - 1;
    best =
      (isLast && key && keyNode ? lineAt(lineCounter, keyNode) : lineAt(lineCounter, next ?? keyNode)) ??
      best;
    current = next;
  }
  return best;
}

/**
 * A mapping key with an empty value (`models:` whose entries are all commented out) means "not set", the same as
 * leaving the key out, so null entries are dropped before validation. Null list items stay and are reported.
 */
function dropNullEntries(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNullEntries);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(value)) {
      if (entry !== null) out[key] = dropNullEntries(entry);
    }
    return out;
  }
  return value;
}

function resolve(document: Document, node: Node | null): Node | null {
  if (node && isAlias(node)) return (node.resolve(document) as Node | undefined) ?? null;
  return node;
}

function lineAt(lineCounter: LineCounter, node: Node | null): number | undefined {
  const offset = node?.range?.[0];
  return offset === undefined ? undefined : lineCounter.linePos(offset).line;
}

function firstLine(message: string): string {
  return message.split('\n')[0]?.trim() ?? message;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
