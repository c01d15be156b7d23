// PushStore in SQLite: `<edge.data_dir>/a2a-push.db` (WAL, the engine and checkpointer of runs.db), beside the run
// records it refers to. Every write is its own synchronous commit (a notification is queued before its first
// attempt), so a kill -9 of the edge loses no queued notification. The file holds the clients' webhook tokens and
// credentials: it is created inside data_dir (0700) and never logged.
import type { WalCheckpointer } from '@iop/sqlite-wal';
import { openDataDirDatabase, type SqlDatabase, type SqlStatement } from '../../governance/usage-database.js';
import type { Logger } from '../../logging.js';
import type { PushAuthentication, PushConfig } from './push-config.js';
import type { NewPushDelivery, PushDelivery, PushStore, PushTaskKey } from './push-store.js';

export const PUSH_DATABASE_FILE = 'a2a-push.db';

interface ConfigRow {
  config: string;
}

interface DeliveryRow {
  id: number;
  principal: string;
  task_id: string;
  config_id: string;
  url: string;
  token: string | null;
  authentication: string | null;
  content_type: string;
  body: string;
  attempts: number;
  queued_ms: number;
  due_ms: number;
}

interface TaskRow {
  principal: string;
  task_id: string;
}

export class SqlitePushStore implements PushStore {
  private readonly statements: Record<string, SqlStatement>;
  private closed = false;

  private constructor(
    private readonly db: SqlDatabase,
    private readonly checkpointer: WalCheckpointer | undefined,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS push_configs (
      principal TEXT NOT NULL,
      task_id TEXT NOT NULL,
      config_id TEXT NOT NULL,
      config TEXT NOT NULL,
      terminal_queued INTEGER NOT NULL DEFAULT 0,
      seq INTEGER NOT NULL,
      PRIMARY KEY (principal, task_id, config_id)
    )`);
    db.exec(`CREATE TABLE IF NOT EXISTS push_outbox (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      principal TEXT NOT NULL,
      task_id TEXT NOT NULL,
      config_id TEXT NOT NULL,
      url TEXT NOT NULL,
      token TEXT,
      authentication TEXT,
      content_type TEXT NOT NULL,
      body TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      queued_ms INTEGER NOT NULL,
      due_ms INTEGER NOT NULL
    )`);
    db.exec('CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (due_ms)');
    const deliveryColumns =
      'id, principal, task_id, config_id, url, token, authentication, content_type, body, attempts, queued_ms, due_ms';
    this.statements = {
      saveConfig: db.prepare(
        `INSERT OR REPLACE INTO push_configs (principal, task_id, config_id, config, terminal_queued, seq)
         VALUES (?, ?, ?, ?, 0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM push_configs))`,
      ),
      getConfig: db.prepare(
        'SELECT config FROM push_configs WHERE principal = ? AND task_id = ? AND config_id = ?',
      ),
      listConfigs: db.prepare(
        'SELECT config FROM push_configs WHERE principal = ? AND task_id = ? ORDER BY seq',
      ),
      deleteConfig: db.prepare(
        'DELETE FROM push_configs WHERE principal = ? AND task_id = ? AND config_id = ?',
      ),
      deleteConfigDeliveries: db.prepare(
        'DELETE FROM push_outbox WHERE principal = ? AND task_id = ? AND config_id = ?',
      ),
      unfinishedTasks: db.prepare(
        'SELECT DISTINCT principal, task_id FROM push_configs WHERE terminal_queued = 0',
      ),
      configuredTasks: db.prepare('SELECT DISTINCT principal, task_id FROM push_configs'),
      forgetConfigs: db.prepare('DELETE FROM push_configs WHERE principal = ? AND task_id = ?'),
      forgetDeliveries: db.prepare('DELETE FROM push_outbox WHERE principal = ? AND task_id = ?'),
      insertDelivery: db.prepare(
        `INSERT INTO push_outbox (principal, task_id, config_id, url, token, authentication, content_type, body,
           attempts, queued_ms, due_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
      ),
      markTerminal: db.prepare(
        'UPDATE push_configs SET terminal_queued = 1 WHERE principal = ? AND task_id = ? AND config_id = ?',
      ),
      terminalQueued: db.prepare(
        'SELECT terminal_queued FROM push_configs WHERE principal = ? AND task_id = ? AND config_id = ?',
      ),
      due: db.prepare(
        `SELECT ${deliveryColumns} FROM push_outbox WHERE due_ms <= ? ORDER BY due_ms, id LIMIT ?`,
      ),
      nextDue: db.prepare('SELECT MIN(due_ms) AS due FROM push_outbox'),
      reschedule: db.prepare('UPDATE push_outbox SET attempts = ?, due_ms = ? WHERE id = ?'),
      remove: db.prepare('DELETE FROM push_outbox WHERE id = ?'),
    };
  }

  /** Opens (creating) `<dataDir>/a2a-push.db` in WAL mode with its checkpointer. */
  static open(dataDir: string, logger: Logger): SqlitePushStore {
    const { db, checkpointer } = openDataDirDatabase(
      dataDir,
      PUSH_DATABASE_FILE,
      'A2A push database',
      logger,
    );
    return new SqlitePushStore(db, checkpointer);
  }

  /** A store over an open database (tests: `:memory:`); no checkpointer. */
  static over(db: SqlDatabase): SqlitePushStore {
    return new SqlitePushStore(db, undefined);
  }

  saveConfig(principal: string, config: PushConfig): void {
    this.write('saveConfig', principal, config.taskId, config.id, JSON.stringify(config));
  }

  getConfig(principal: string, taskId: string, configId: string): PushConfig | undefined {
    const row = this.statement('getConfig').get(principal, taskId, configId) as ConfigRow | undefined;
    return row ? (JSON.parse(row.config) as PushConfig) : undefined;
  }

  listConfigs(principal: string, taskId: string): PushConfig[] {
    const rows = this.statement('listConfigs').all(principal, taskId) as ConfigRow[];
    return rows.map((row) => JSON.parse(row.config) as PushConfig);
  }

  deleteConfig(principal: string, taskId: string, configId: string): boolean {
    return this.transaction(() => {
      this.statement('deleteConfigDeliveries').run(principal, taskId, configId);
      return Number(this.statement('deleteConfig').run(principal, taskId, configId).changes) > 0;
    });
  }

  unfinishedTasks(): PushTaskKey[] {
    return (this.statement('unfinishedTasks').all() as TaskRow[]).map(taskKey);
  }

  configuredTasks(): PushTaskKey[] {
    return (this.statement('configuredTasks').all() as TaskRow[]).map(taskKey);
  }

  forgetTask(task: PushTaskKey): void {
    this.transaction(() => {
      this.statement('forgetDeliveries').run(task.principal, task.taskId);
      this.statement('forgetConfigs').run(task.principal, task.taskId);
    });
  }

  enqueue(deliveries: readonly NewPushDelivery[], now: number, terminal: boolean): void {
    if (deliveries.length === 0) return;
    this.transaction(() => {
      for (const delivery of deliveries) {
        const row = this.statement('terminalQueued').get(
          delivery.principal,
          delivery.taskId,
          delivery.configId,
        ) as { terminal_queued: number } | undefined;
        // A config gets its task's terminal notification once (a config set later on an ended task gets its own).
        if (terminal && row?.terminal_queued === 1) continue;
        this.statement('deleteConfigDeliveries').run(delivery.principal, delivery.taskId, delivery.configId);
        this.statement('insertDelivery').run(
          delivery.principal,
          delivery.taskId,
          delivery.configId,
          delivery.url,
          delivery.token ?? null,
          delivery.authentication ? JSON.stringify(delivery.authentication) : null,
          delivery.contentType,
          delivery.body,
          now,
          now,
        );
        if (terminal)
          this.statement('markTerminal').run(delivery.principal, delivery.taskId, delivery.configId);
      }
    });
  }

  due(now: number, limit: number): PushDelivery[] {
    return (this.statement('due').all(now, limit) as DeliveryRow[]).map((row) => ({
      id: Number(row.id),
      principal: row.principal,
      taskId: row.task_id,
      configId: row.config_id,
      url: row.url,
      ...(row.token !== null ? { token: row.token } : {}),
      ...(row.authentication !== null
        ? { authentication: JSON.parse(row.authentication) as PushAuthentication }
        : {}),
      contentType: row.content_type,
      body: row.body,
      attempts: Number(row.attempts),
      queuedAt: Number(row.queued_ms),
      dueAt: Number(row.due_ms),
    }));
  }

  nextDueAt(): number | undefined {
    const row = this.statement('nextDue').get() as { due: number | null } | undefined;
    return row?.due === null || row?.due === undefined ? undefined : Number(row.due);
  }

  reschedule(id: number, attempts: number, dueAt: number): void {
    this.write('reschedule', attempts, dueAt, id);
  }

  remove(id: number): void {
    this.write('remove', id);
  }

  /** Closes the database; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    await this.checkpointer?.close();
  }

  private statement(name: string): SqlStatement {
    const statement = this.statements[name];
    if (!statement) throw new Error(`unknown statement ${name}`);
    return statement;
  }

  private write(name: string, ...parameters: unknown[]): void {
    this.statement(name).run(...parameters);
    this.checkpointer?.committed();
  }

  private transaction<T>(body: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = body();
      this.db.exec('COMMIT');
      this.checkpointer?.committed();
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }
}

function taskKey(row: TaskRow): PushTaskKey {
  return { principal: row.principal, taskId: row.task_id };
}
