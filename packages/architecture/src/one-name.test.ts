// One name per concept (shared/ARCHITECTURE.md convention 14, agent-contract/glossary.md): no two modules of the
// apps and packages export a type of the same name, except the pairs listed below, each with why it is left. A new
// duplicate fails here; so does a listed pair once it is gone (take it off the list).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { duplicateNames, exportedTypeNames, readExportedNames } from './exported-names.js';
import { listModules } from './import-graph.js';

const REPO = path.resolve(import.meta.dirname, '../../..');

/**
 * Names two modules still declare, as `name → modules`, each with its reason. Shrink this list; never grow it
 * without a reason a reviewer accepts.
 */
const KNOWN: Readonly<Record<string, { modules: string[]; why: string }>> = {
  CliCommand: {
    modules: [
      'apps/edge/src/cli/command.ts',
      'apps/node/src/cli/command.ts',
      'packages/cli-kit/src/cli-command.ts',
    ],
    why: "each app's CliCommand is cli-kit's, specialised to the app's CliIo",
  },
  CliIo: {
    modules: ['apps/edge/src/cli/command.ts', 'apps/node/src/cli/command.ts'],
    why: "each CLI's own I/O (edge and node commands need different things)",
  },
  DiscoveredBackend: {
    modules: ['apps/edge/src/present/node-discovered.ts', 'packages/wire/src/messages.ts'],
    why: "the wire's message (the protocol's name) and the edge's validated view of it",
  },
  DiscoveredCli: {
    modules: ['apps/edge/src/present/node-discovered.ts', 'packages/wire/src/messages.ts'],
    why: "the wire's message (the protocol's name) and the edge's validated view of it",
  },
  DiscoveredGpu: {
    modules: ['apps/edge/src/present/node-discovered.ts', 'packages/wire/src/messages.ts'],
    why: "the wire's message (the protocol's name) and the edge's validated view of it",
  },
  DiscoveredHost: {
    modules: ['apps/edge/src/present/node-discovered.ts', 'packages/wire/src/messages.ts'],
    why: "the wire's message (the protocol's name) and the edge's validated view of it",
  },
  ProviderConfig: {
    modules: ['packages/config/src/types.ts', 'packages/wire/src/messages.ts'],
    why: "edge.yaml's provider entry and the wire message (the protocol's name) the edge sends a node",
  },
  ProviderStatus: {
    modules: ['apps/edge/src/present/provider-status.ts', 'packages/wire/src/admin.ts'],
    why: "the pool's view and the admin API message (the protocol's name)",
  },
  RefreshReport: {
    modules: ['packages/config/src/types.ts', 'packages/wire/src/admin.ts'],
    why: "the refresh classification and the admin API message (the protocol's name)",
  },
  SignalSource: {
    modules: ['apps/edge/src/cli/serve.ts', 'apps/node/src/cli/command.ts'],
    why: 'the same injected process-signal shape in both CLIs; to move to @iop/cli-kit',
  },
  SqlDatabase: {
    modules: ['apps/edge/src/governance/usage-database.ts', 'apps/node/src/history/sqlite-driver.ts'],
    why: "each store's small driver interface over better-sqlite3 / node:sqlite; to move to @iop/sqlite-wal",
  },
  SqlStatement: {
    modules: ['apps/edge/src/governance/usage-database.ts', 'apps/node/src/history/sqlite-driver.ts'],
    why: "each store's small driver interface over better-sqlite3 / node:sqlite; to move to @iop/sqlite-wal",
  },
  UiError: {
    modules: ['apps/edge/src/ui/errors.ts', 'packages/ui-api/src/ui-api-types.ts'],
    why: "the dashboard API's error body (JSON shape) and the edge's error class that renders it",
  },
  UsageGroup: {
    modules: ['apps/edge/src/governance/usage-store.ts', 'packages/wire/src/admin.ts'],
    why: "the usage store's grouping and the admin API enum (the protocol's name)",
  },
};

/** Source trees whose modules are read: the apps, and every package but generated code and test support. */
function sourceModules(): string[] {
  const packages = fs
    .readdirSync(path.join(REPO, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(REPO, 'packages', entry.name, 'src')))
    .map((entry) => entry.name)
    // proto is generated code (the protocol's names); testkit is test support only
    .filter((name) => name !== 'proto' && name !== 'testkit');
  const roots = [
    ...['edge', 'node', 'edge-ui'].map((app) => `apps/${app}/src`),
    ...packages.map((name) => `packages/${name}/src`),
  ];
  return roots.flatMap((root) => listModules(path.join(REPO, root)));
}

describe('exported type names', () => {
  it('reads interfaces, classes, type aliases and enums a module exports, not re-exports or local types', () => {
    const text = [
      'export interface Clock { now(): number }',
      'export class ManualClock {}',
      'export type ClockTimer = object | number;',
      'export enum Mode { A }',
      'export declare class Declared {}',
      'interface Local {}',
      "export { Other } from './other.js';",
      "export type { Again } from './again.js';",
      'export const systemClock = {};',
      'export function sleep() {}',
    ].join('\n');
    expect(exportedTypeNames('clock.ts', text)).toEqual([
      'Clock',
      'ManualClock',
      'ClockTimer',
      'Mode',
      'Declared',
    ]);
  });

  it('reports a name declared by two modules, with both', () => {
    expect(
      duplicateNames([
        { module: 'apps/edge/src/clock.ts', names: ['Clock', 'ClockTimer'] },
        { module: 'apps/node/src/link/clock.ts', names: ['Clock', 'TimerHandle'] },
        { module: 'packages/clock/src/clock.ts', names: ['ClockTimer'] },
      ]),
    ).toEqual(
      new Map([
        ['Clock', ['apps/edge/src/clock.ts', 'apps/node/src/link/clock.ts']],
        ['ClockTimer', ['apps/edge/src/clock.ts', 'packages/clock/src/clock.ts']],
      ]),
    );
  });
});

describe('the repository', () => {
  const read = readExportedNames(REPO, sourceModules());
  const duplicates = duplicateNames(read);

  it('reads the names it checks', () => {
    const names = new Map(read.map((entry) => [entry.module, entry.names] as const));
    expect(names.get('packages/clock/src/clock.ts')).toEqual(expect.arrayContaining(['Clock', 'ClockTimer']));
    expect(names.get('apps/node/src/link/edge-link.ts')).toContain('EdgeLink');
    expect(names.get('apps/edge/src/node/node-link.ts')).toContain('NodeLink');
  });

  it('has no type name exported by two modules beyond the known pairs', () => {
    const unexpected = [...duplicates]
      .filter(
        ([name, modules]) => JSON.stringify(KNOWN[name]?.modules.slice().sort()) !== JSON.stringify(modules),
      )
      .map(([name, modules]) => `${name}: ${modules.join(', ')}`);
    expect(unexpected).toEqual([]);
  });

  it('lists no known pair that is gone', () => {
    const gone = Object.keys(KNOWN).filter((name) => !duplicates.has(name));
    expect(gone).toEqual([]);
  });
});
