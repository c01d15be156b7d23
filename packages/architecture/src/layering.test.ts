// The repository's layering (shared/ARCHITECTURE.md): every app's import graph against its table, no import
// cycle anywhere, packages never importing an app, no app importing another app's source, and generated protobuf
// code only where the wire is spoken. The rules themselves are tested on small graphs first, so a rule that
// could never fire cannot hide behind a clean repository.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { findCycles } from './find-cycles.js';
import { listModules, readImportGraph, type ImportGraph } from './import-graph.js';
import { checkLayering, describeViolations, type LayerTable } from './layer-rules.js';
import { APP_PACKAGES, APP_TABLES, EDGE, NODE, PACKAGE_LAYERS } from './layer-tables.js';

const REPO = path.resolve(import.meta.dirname, '../../..');

describe('the layering rules', () => {
  const table: LayerTable = {
    root: 'app/src',
    layers: { base: 0, 'base/inner': 0, service: 1, web: 2, api: 2, 'main.ts': 3 },
    restricted: [{ name: 'surface', entries: ['web', 'api'], mayImport: ['service'] }],
  };
  const graph = (edges: [string, string][]): ImportGraph => ({
    modules: [...new Set(edges.flat())].map((name) => `app/src/${name}`),
    edges: edges.map(([from, to]) => ({ from: `app/src/${from}`, to: `app/src/${to}`, kind: 'relative' })),
  });

  it('allows imports down the table and within a layer entry', () => {
    const ok = graph([
      ['main.ts', 'web/page.ts'],
      ['web/page.ts', 'service/run.ts'],
      ['web/page.ts', 'web/form.ts'],
      ['service/run.ts', 'base/inner/x.ts'],
    ]);
    expect(checkLayering(ok, table)).toEqual([]);
  });

  it('refuses an upward import', () => {
    expect(describeViolations(checkLayering(graph([['service/run.ts', 'web/page.ts']]), table))).toEqual([
      'upward: app/src/service/run.ts → app/src/web/page.ts (service (layer 1) imports web (layer 2))',
    ]);
  });

  it('refuses a surface importing anything but what its group allows, another surface included', () => {
    const rules = checkLayering(
      graph([
        ['web/page.ts', 'base/x.ts'],
        ['web/page.ts', 'api/route.ts'],
      ]),
      table,
    ).map((violation) => `${violation.rule} ${violation.to}`);
    expect(rules).toEqual(['restricted app/src/base/x.ts', 'restricted app/src/api/route.ts']);
  });

  it('refuses a sealed entry importing what its group names, however low', () => {
    const sealed: LayerTable = {
      ...table,
      restricted: [{ name: 'sealed service', entries: ['service'], mayNotImport: ['base'] }],
    };
    expect(
      describeViolations(
        checkLayering(
          graph([
            ['service/run.ts', 'base/inner/x.ts'],
            ['web/page.ts', 'base/x.ts'],
          ]),
          sealed,
        ),
      ),
    ).toEqual([
      'restricted: app/src/service/run.ts → app/src/base/inner/x.ts (a sealed service (service) may not import base)',
    ]);
  });

  it('refuses a relative import out of the tree and a module with no layer', () => {
    const outside: ImportGraph = {
      modules: ['app/src/service/run.ts', 'app/src/stray.ts'],
      edges: [{ from: 'app/src/service/run.ts', to: 'other/src/x.ts', kind: 'relative' }],
    };
    expect(checkLayering(outside, table).map((violation) => violation.rule)).toEqual([
      'unknown-module',
      'leaves-tree',
    ]);
  });

  it('finds cycles of any length, and self-imports, but not a diamond', () => {
    const edges = (pairs: [string, string][]) => pairs.map(([from, to]) => ({ from, to }));
    expect(
      findCycles(
        edges([
          ['a', 'b'],
          ['b', 'c'],
          ['c', 'a'],
          ['c', 'd'],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(findCycles(edges([['a', 'a']]))).toEqual([['a']]);
    expect(
      findCycles(
        edges([
          ['a', 'b'],
          ['a', 'c'],
          ['b', 'd'],
          ['c', 'd'],
        ]),
      ),
    ).toEqual([]);
  });
});

describe('the repository', () => {
  const appGraphs = APP_TABLES.map((table) => ({
    table,
    graph: readImportGraph({ repoRoot: REPO, roots: [table.root] }),
  }));
  const packageNames = fs
    .readdirSync(path.join(REPO, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(REPO, 'packages', entry.name, 'src')))
    .map((entry) => entry.name);
  const packageGraphs = packageNames.map((name) => ({
    name,
    root: `packages/${name}/src`,
    graph: readImportGraph({ repoRoot: REPO, roots: [`packages/${name}/src`] }),
  }));

  it('reads the imports it checks', () => {
    const edge = appGraphs.find(({ table }) => table === EDGE)!.graph;
    const node = appGraphs.find(({ table }) => table === NODE)!.graph;
    expect(edge.edges.length).toBeGreaterThan(500);
    expect(node.edges.length).toBeGreaterThan(150);
    expect(edge.edges).toContainEqual({
      from: 'apps/edge/src/main.ts',
      to: 'apps/edge/src/run-edge.ts',
      kind: 'relative',
    });
  });

  it.each(APP_TABLES.map((table) => [table.root, table] as const))(
    '%s imports only down its table',
    (_root, table) => {
      const { graph } = appGraphs.find((entry) => entry.table === table)!;
      expect(describeViolations(checkLayering(graph, table))).toEqual([]);
    },
  );

  it.each([...APP_TABLES.map((table) => table.root), ...packageNames.map((name) => `packages/${name}/src`)])(
    '%s has no import cycle',
    (root) => {
      const graph =
        appGraphs.find(({ table }) => table.root === root)?.graph ??
        packageGraphs.find((entry) => entry.root === root)!.graph;
      const relative = graph.edges.filter((edge) => edge.kind === 'relative');
      expect(findCycles(relative)).toEqual([]);
    },
  );

  it('gives every package a layer, and a package imports only lower packages, never an app', () => {
    expect(packageNames.filter((name) => PACKAGE_LAYERS[name] === undefined)).toEqual([]);
    const problems: string[] = [];
    for (const { name, root, graph } of packageGraphs) {
      for (const edge of graph.edges) {
        if (edge.kind === 'relative') {
          if (!edge.to.startsWith(`${root}/`))
            problems.push(`${edge.from} → ${edge.to} (outside the package)`);
          continue;
        }
        if (APP_PACKAGES.includes(edge.to)) problems.push(`${edge.from} → ${edge.to} (an app)`);
        const imported = /^@iop\/([^/]+)/.exec(edge.to)?.[1];
        if (imported === undefined || imported === name) continue;
        const layer = PACKAGE_LAYERS[imported];
        if (layer === undefined || layer >= PACKAGE_LAYERS[name]) {
          problems.push(`${edge.from} → ${edge.to} (layer ${layer} from ${name}'s ${PACKAGE_LAYERS[name]})`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("a surface's tests and test support import no other surface either (shared support lives in the kit)", () => {
    const surfaces = EDGE.restricted!.find((group) => group.name === 'surface')!.entries;
    const withTests = readImportGraph({ repoRoot: REPO, roots: [EDGE.root], includeTests: true });
    const surfaceOf = (file: string): string | undefined => {
      const top = file.slice(EDGE.root.length + 1).split('/')[0];
      return file.startsWith(`${EDGE.root}/`) && surfaces.includes(top) ? top : undefined;
    };
    expect(withTests.modules.length).toBeGreaterThan(
      appGraphs.find(({ table }) => table === EDGE)!.graph.modules.length,
    );
    const problems = withTests.edges
      .filter((edge) => edge.kind === 'relative')
      .filter((edge) => {
        const from = surfaceOf(edge.from);
        const to = surfaceOf(edge.to);
        return from !== undefined && to !== undefined && from !== to;
      })
      .map((edge) => `${edge.from} → ${edge.to}`);
    expect(problems).toEqual([]);
  });

  it("no app imports another app's source or module", () => {
    const problems = appGraphs.flatMap(({ table, graph }) =>
      graph.edges
        .filter((edge) => edge.kind === 'package' && ['@iop/edge', '@iop/node'].includes(edge.to))
        .map((edge) => `${edge.from} → ${edge.to} (from ${table.root})`),
    );
    expect(problems).toEqual([]);
  });

  it('keeps generated protobuf code, oneof cases and wire enums out of the service, placement, pool, governance and surfaces', () => {
    const guarded = ['service', 'placement', 'pool', 'governance', 'openai', 'anthropic', 'a2a', 'console'];
    const offending = guarded
      .filter((folder) => fs.existsSync(path.join(REPO, EDGE.root, folder)))
      .flatMap((folder) => listModules(path.join(REPO, EDGE.root, folder)))
      .filter((file) =>
        /@iop\/proto|\$case|\b(CancelAction|ProviderHealth|RegisterRejectCode|LifecycleCommand)\./.test(
          fs.readFileSync(file, 'utf8'),
        ),
      )
      .map((file) => path.relative(REPO, file));
    expect(offending).toEqual([]);
  });
});
