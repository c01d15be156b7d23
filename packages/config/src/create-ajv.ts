// The one way this project makes an ajv instance (config, OpenAI and Anthropic request bodies).
//
// ajv's code optimizer counts the generated code's variables in plain objects keyed by the variable's name
// (`err285`, `valid61`, ...): compiling the edge's schemas adds about 1,300 distinct first keys to `{}`. V8
// remembers at most 1,536 property transitions from the empty object's map, so those dead objects fill its
// table, and until a full GC clears them (an edge under steady load may not run one for a long time) every
// object built from `{}` by adding a property V8 has not seen yet gets a new map of its own: Node's request
// headers, the JSON body, option bags. Their inline caches then go megamorphic and each such object takes V8's
// slow path (new maps, migrations). Without the optimizer the generated validators are a little longer and
// validate as fast (measured in bench/README.md, 2026-12-02 third stop), and nothing is left behind.
import { Ajv, type Options } from 'ajv';

export type AjvOptions = Omit<Options, 'code'>;

export function createAjv(options: AjvOptions): Ajv {
  return new Ajv({ ...options, code: { optimize: false } });
}
