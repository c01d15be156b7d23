// Adds one entry to `openai.api_keys` of an edge.yaml text by editing the YAML document (not re-rendering it), so
// comments, anchors and layout elsewhere in the file stay as the operator wrote them. Creates `openai` and
// `api_keys` when missing. The caller validates the result (parseConfigText) before writing it.
import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { ConfigError } from './errors.js';

/** What `iop-edge keys create` writes: the digest only, never the key. */
export interface ApiKeyEntry {
  readonly id: string;
  readonly key_sha256: string;
  readonly models?: readonly string[];
  readonly rpm?: number;
  readonly tpm?: number;
  readonly max_concurrent?: number;
  readonly token_budget?: { readonly tokens: number; readonly per: 'day' | 'month' };
  /** Fair share of a model's queue (1..1000). */
  readonly weight?: number;
  readonly priority?: 'interactive' | 'batch';
}

export function appendApiKey(text: string, entry: ApiKeyEntry): string {
  const document = parseDocument(text);
  if (document.errors.length > 0) {
    throw new ConfigError('invalid_argument', `not valid YAML: ${document.errors[0]?.message ?? ''}`);
  }
  if (document.contents === null)
    document.contents = document.createNode({}) as unknown as typeof document.contents;
  if (!isMap(document.contents)) throw new ConfigError('invalid_argument', 'the document is not a mapping');
  let openai = document.get('openai');
  if (!isMap(openai)) {
    if (openai !== undefined && openai !== null) {
      throw new ConfigError('invalid_argument', 'openai is not a mapping');
    }
    openai = document.createNode({});
    document.set('openai', openai);
  }
  const section = openai as YAMLMap;
  const existing = section.get('api_keys');
  let keys: YAMLSeq;
  if (isSeq(existing)) keys = existing;
  else {
    if (existing !== undefined && existing !== null) {
      throw new ConfigError('invalid_argument', 'openai.api_keys is not a list');
    }
    keys = document.createNode([]);
    section.set('api_keys', keys);
  }
  const node = document.createNode({ ...entry });
  // One line per key reads well in a list of keys.
  node.flow = true;
  if (keys.items.length === 0) keys.flow = false;
  keys.add(node);
  return document.toString();
}
