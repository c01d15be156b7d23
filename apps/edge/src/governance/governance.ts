// Governance of one edge, built once by the composition root: the keys each surface accepts (live on config
// refresh), the governor that applies their limits at admission, and the usage store every finished run is
// recorded in (`<edge.data_dir>/usage.db`) with its Prometheus counter. `close()` writes what is buffered and
// closes the database; call it after the service stopped (runs that end while stopping are still recorded).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startWalCheckpointer } from '@iop/sqlite-wal';
import type { EdgeConfig } from '@iop/config';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../logging.js';
import { createGovernor, type Governor } from './governor.js';
import { createKeyDirectory, type KeyDirectory } from './key-directory.js';
import { openUsageDatabase } from './usage-database.js';
import { createUsageMetrics } from './usage-metrics.js';
import { UsageStore, type UsageQuery, type UsageRow } from './usage-store.js';

export const USAGE_DATABASE_FILE = 'usage.db';

export interface Governance {
  readonly keys: KeyDirectory;
  readonly governor: Governor;
  /** Usage totals by key, model, node, provider or surface (admin API, dashboard). */
  usage(query: UsageQuery): UsageRow[];
  /** Takes the API keys of an applied config refresh. */
  applyConfig(config: EdgeConfig): void;
  /** Closes the usage store; resolves once its files are no longer in use. Idempotent. */
  close(): Promise<void>;
}

export interface GovernanceOptions {
  config: EdgeConfig;
  clock: Clock;
  logger: Logger;
  /** The edge's Prometheus registry (iop_tokens_total); none = no metric. */
  registry?: Registry;
}

export function openGovernance(options: GovernanceOptions): Governance {
  const { config, clock, logger } = options;
  fs.mkdirSync(config.edge.data_dir, { recursive: true, mode: 0o700 });
  const file = path.join(config.edge.data_dir, USAGE_DATABASE_FILE);
  const { db, engine } = openUsageDatabase(file);
  const checkpointer = startWalCheckpointer({
    db,
    file,
    engine,
    betterSqlitePath:
      engine === 'better-sqlite3' ? createRequire(import.meta.url).resolve('better-sqlite3') : undefined,
    onFailure: (error, when) =>
      logger.warn(
        { err: error, when },
        when === 'restore'
          ? 'restoring the usage database automatic checkpoint failed'
          : 'usage database checkpoint worker failed; checkpointing in the writer',
      ),
  });
  const store = new UsageStore({
    db,
    checkpointer,
    clock,
    logger,
    retentionDays: config.usage.retention_days,
  });
  logger.info({ file, engine, retention_days: config.usage.retention_days }, 'usage store open');
  const metrics = options.registry ? createUsageMetrics(options.registry) : undefined;
  const keys = createKeyDirectory(config);
  const governor = createGovernor({
    clock,
    spent: store,
    sink: {
      record(record) {
        store.record(record);
        metrics?.record(record);
      },
    },
    onRefused: (principal, error) => {
      metrics?.refused(principal, error.limit);
      logger.debug({ principal, code: error.code, limit: error.limit }, 'run refused by a key limit');
    },
  });
  return {
    keys,
    governor,
    usage: (query) => store.summary(query),
    applyConfig: (next) => keys.applyConfig(next),
    close: () => store.close(),
  };
}
