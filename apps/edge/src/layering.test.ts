// The edge's layering, checked over the import graph of src/ (every `import`/`export ... from` of a relative
// path, type-only imports included): a module may import its own layer and the layers below it, never one above,
// and one surface never imports another. Tests and test-support files are exempt (they wire layers together).
//
//   root        edge-runtime.ts, surfaces.ts, surface.ts, run-edge.ts, main.ts, cli/
//   surfaces    openai/ a2a/ console/ admin/ bootstrap/ ui/          (translate a protocol to service calls)
//   service     service/                             (one run supervisor per run: admission and run lifetime)
//   cluster     cluster/                 (cluster mode: the other edges as placement's remote directory + transport)
//   placement   placement/                                           (where a run executes: local pool | remote)
//   below it    refresh/ governance/ adopt/ → pool/ metrics/ → node/ → transport/ → events/ → base
//   base        logging.ts version.ts clock.ts random-ids.ts fault.ts net/ http/ tls/
//
// transport/ is the listener (TCP/TLS, bounds before registration) and hands each framed connection to a
// ConnectionHandler; node/ implements it (registration, NodeLink, registry, heartbeats) and never the reverse.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const SRC = path.dirname(fileURLToPath(import.meta.url));

const LAYERS: Record<string, number> = {
  'logging.ts': 0,
  'version.ts': 0,
  'clock.ts': 0,
  'random-ids.ts': 0,
  'fault.ts': 0,
  net: 0,
  http: 0,
  tls: 0,
  events: 1,
  transport: 2,
  node: 3,
  pool: 4,
  metrics: 4,
  refresh: 5,
  governance: 5,
  adopt: 5,
  placement: 5.5,
  cluster: 5.7,
  service: 6,
  openai: 7,
  a2a: 7,
  console: 7,
  admin: 7,
  bootstrap: 7,
  ui: 7,
  'edge-runtime.ts': 8,
  'surfaces.ts': 8,
  'surface.ts': 8,
  'run-edge.ts': 8,
  'main.ts': 8,
  cli: 8,
};
const SURFACES = 7;

interface Edge {
  from: string;
  to: string;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'test-support') files.push(...sourceFiles(full));
    } else if (
      entry.name.endsWith('.ts') &&
      !entry.name.endsWith('.test.ts') &&
      !entry.name.endsWith('.d.ts')
    ) {
      files.push(full);
    }
  }
  return files;
}

/** The layer key of a file: its top-level directory under src/, or its own name at the top level. */
function layerKey(file: string): string {
  const [first = ''] = path.relative(SRC, file).split(path.sep);
  return first;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

function importEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      if (!specifier) continue;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      edges.push({ from: path.relative(SRC, file), to: path.relative(SRC, target) });
    }
  }
  return edges;
}

describe('edge layering', () => {
  const edges = importEdges();

  it('finds the imports it checks', () => {
    expect(edges.length).toBeGreaterThan(200);
    expect(edges).toContainEqual({ from: 'service/edge-service.ts', to: 'pool/provider-pool.ts' });
  });

  it('gives every top-level module of src/ a layer', () => {
    const unknown = new Set(
      sourceFiles(SRC)
        .map(layerKey)
        .filter((key) => LAYERS[key] === undefined),
    );
    expect([...unknown]).toEqual([]);
  });

  it('has no import from a lower layer into a higher one, and no surface importing another', () => {
    const violations = edges.filter(({ from, to }) => {
      const fromKey = layerKey(path.join(SRC, from));
      const toKey = layerKey(path.join(SRC, to));
      const fromLayer = LAYERS[fromKey] ?? Infinity;
      const toLayer = LAYERS[toKey] ?? Infinity;
      if (toLayer > fromLayer) return true;
      return fromLayer === SURFACES && toLayer === SURFACES && fromKey !== toKey;
    });
    expect(violations.map(({ from, to }) => `${from} → ${to}`)).toEqual([]);
  });

  it('keeps generated protobuf code, oneof cases and wire enums out of the service, the pool and the A2A/OpenAI/console surfaces', () => {
    const offending = sourceFiles(SRC)
      .filter((file) =>
        ['service', 'pool', 'openai', 'a2a', 'console', 'governance'].includes(layerKey(file)),
      )
      .filter((file) =>
        /@iop\/proto|\$case|\b(CancelAction|ProviderHealth|RegisterRejectCode|LifecycleCommand)\./.test(
          fs.readFileSync(file, 'utf8'),
        ),
      )
      .map((file) => path.relative(SRC, file));
    expect(offending).toEqual([]);
  });
});
