// `iop-node history`: recent runs from the local history, newest first (a table, or JSON with --json). Opens the
// database read-only so it works next to a running agent and never marks its runs interrupted.
import fs from 'node:fs';
import path from 'node:path';
import type { RunSummary } from '../history/run-history.js';
import { openRunHistory } from '../history/node-sqlite-fallback.js';
import { HISTORY_FILE_NAME } from '../history/sqlite-run-history.js';
import {
  booleanFlag,
  integerFlag,
  parseFlags,
  stringFlag,
  UsageError,
  writeLine,
  type CliCommand,
} from './command.js';
import { resolveDataDir } from './data-dir.js';

export const historyCommand: CliCommand = {
  path: ['history'],
  summary: 'list recent runs from the local run history',
  usage: 'history [--json] [--limit N] [--data-dir D]',
  async run(argv, io) {
    const flags = parseFlags(argv, {
      json: { type: 'boolean' },
      limit: { type: 'string' },
      'data-dir': { type: 'string' },
    });
    if (flags.positionals.length > 0) throw new UsageError(`unexpected argument '${flags.positionals[0]}'`);
    const limit = integerFlag(flags, 'limit', 20, 1);
    const dataDir = resolveDataDir(stringFlag(flags, 'data-dir'), io.env, io.cwd);
    const file = path.join(dataDir, HISTORY_FILE_NAME);
    const json = booleanFlag(flags, 'json');
    if (!fs.existsSync(file)) {
      if (json) writeLine(io.stdout, '[]');
      else writeLine(io.stdout, `no run history in ${dataDir}`);
      return 0;
    }
    const { history } = openRunHistory({ path: file, readonly: true });
    try {
      const runs = history.list({ limit });
      if (json) writeLine(io.stdout, JSON.stringify(runs.map(toJson), null, 2));
      else if (runs.length === 0) writeLine(io.stdout, `no runs recorded in ${dataDir}`);
      else printTable(io.stdout, runs);
    } finally {
      await history.close();
    }
    return 0;
  },
};

function toJson(run: RunSummary): Record<string, unknown> {
  return {
    run_id: run.runId,
    status: run.status,
    adapter: run.adapter,
    target: run.target,
    session_id: run.sessionId,
    provider_id: run.providerId,
    background: run.background,
    started_at: new Date(run.startedAt).toISOString(),
    ended_at: run.endedAt === null ? null : new Date(run.endedAt).toISOString(),
    duration_ms: run.endedAt === null ? null : run.endedAt - run.startedAt,
    detail: run.detail,
    error_code: run.errorCode,
    error_message: run.errorMessage,
    usage: run.usage,
    event_count: run.eventCount,
  };
}

function printTable(out: NodeJS.WritableStream, runs: RunSummary[]): void {
  const header = [
    'RUN ID',
    'STATUS',
    'ADAPTER',
    'TARGET',
    'SESSION',
    'STARTED',
    'DURATION',
    'EVENTS',
    'OUTCOME',
  ];
  const rows = runs.map((run) => [
    run.runId,
    run.status,
    run.adapter,
    run.target,
    run.sessionId,
    new Date(run.startedAt).toISOString().replace('T', ' ').slice(0, 19),
    run.endedAt === null ? '-' : formatDuration(run.endedAt - run.startedAt),
    String(run.eventCount),
    outcome(run),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column].length)),
  );
  for (const row of [header, ...rows]) {
    writeLine(
      out,
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column])))
        .join('  ')
        .trimEnd(),
    );
  }
}

function outcome(run: RunSummary): string {
  if (run.errorCode) return `${run.errorCode}${run.errorMessage ? `: ${run.errorMessage}` : ''}`;
  return run.detail;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}
