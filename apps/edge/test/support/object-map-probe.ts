// Child process for schema-compile-heap.test.ts (run with --allow-natives-syntax): compiles every schema the edge
// compiles — the config schema (validating configs/edge.yaml), the OpenAI bodies (chat, responses, embeddings,
// completions) and the Anthropic ones — and reports whether V8 still gives two `{}` objects that get the same new
// property one shared map.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '@iop/config';

// V8's own test intrinsic, only parsed with --allow-natives-syntax (hence a Function, not inline syntax).
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** Two fresh objects get the property `key`: true when V8 gave both the same (cached) map. */
function sharesMap(key: string): boolean {
  const first: Record<string, number> = {};
  first[key] = 1;
  const second: Record<string, number> = {};
  second[key] = 2;
  return haveSameMap(first, second);
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const before = sharesMap('probe_before_compiling');
await import('../../src/openai/request-validator.js');
await import('../../src/openai/embeddings.js');
await import('../../src/openai/completions.js');
await import('../../src/anthropic/messages-validator.js');
const loaded = await loadConfigFile(path.join(repoRoot, 'configs/edge.yaml'));
const after = sharesMap('probe_after_compiling');
process.stdout.write(`${JSON.stringify({ before, after, configOk: loaded.ok })}\n`);
