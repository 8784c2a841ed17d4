/**
 * The one narrow interface the rest of the code sees. Two implementations: PostgreSQL (pg pool) and
 * embedded PGlite. Both speak the same PostgreSQL dialect, so every statement is written once; where
 * they differ (chunk size, upkeep after writes, pool figures) the difference lives in the
 * implementation, and a caller reads a fact about the database, never which one it is.
 */
export interface Queryable {
  /** One statement with $n parameters; returns its rows. */
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<Row[]>;
  /** A script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

/**
 * Runs `COPY table (columns) FROM STDIN` (text format) with the given rows: one value per column,
 * tab-separated, one row per line (src/db/copy-text.ts). Many rows load faster so than as parameters.
 */
export type CopyFrom = (sql: string, text: string | Uint8Array) => Promise<void>;

/** Inside a transaction: statements, and parts of it that can be undone on their own. */
export interface Transaction extends Queryable {
  copyFrom: CopyFrom;
  /**
   * Runs work under a savepoint: kept when it resolves, undone when it throws (the error passes on
   * and the transaction stays usable). `undo: true` undoes it when it resolves too (a dry run: what
   * the statements answered, nothing of what they wrote).
   */
  savepoint<T>(work: () => Promise<T>, options?: { undo?: boolean }): Promise<T>;
}

/** A transaction's statements given the savepoints of Transaction (both engines' implementations). */
export function inTransaction(q: Queryable, copyFrom: CopyFrom): Transaction {
  let depth = 0;
  return {
    query: (text, params) => q.query(text, params),
    exec: (script) => q.exec(script),
    copyFrom,
    async savepoint(work, options) {
      // Nested savepoints get names of their own: a name used again would shadow the outer one.
      const name = `sfa_savepoint_${++depth}`;
      await q.query(`SAVEPOINT ${name}`);
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await work();
      } catch (error) {
        await q.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
        throw error;
      } finally {
        depth--;
      }
      await q.query(options?.undo ? `ROLLBACK TO SAVEPOINT ${name}` : `RELEASE SAVEPOINT ${name}`);
      return result;
    },
  };
}

export interface Database extends Queryable {
  /** Which engine, for people: the label of a metric. Nothing branches on it. */
  readonly backend: 'postgres' | 'pglite';
  /**
   * Whether other processes may use the same database at once. Then what the instances must agree
   * on (rate limit counts) is kept in the database, and no demo tenant is made in it unasked.
   */
  readonly sharedByProcesses: boolean;
  /**
   * Runs work in one transaction: committed when it resolves, rolled back when it throws. Retried
   * from the start on a serialization failure or deadlock, so work must not have side effects
   * outside the database.
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * Told how many rows a write changed in a table, so that the planner's statistics follow a bulk
   * load at once instead of whenever autovacuum gets to it (PGlite has no autovacuum at all). Never
   * throws.
   */
  wrote(table: string, rows: number): Promise<void>;
  /**
   * Rows one write statement should carry at most: a larger batch is written in several statements
   * inside one transaction (still all or nothing). Infinity: one statement, however large.
   */
  readonly statementRows: number;
  /** Connection usage, for metrics. */
  poolStats(): PoolStats;
  /** The statistics upkeep that `wrote` ran in this process so far (src/db/table-upkeep.ts), for metrics. */
  upkeepStats(): UpkeepStats;
}

export interface PoolStats {
  /** Connections the pool may open now (fewer for a while after the server refused one as one too many). */
  max: number;
  /** Connections open (idle or in use). */
  total: number;
  /**
   * Open connections not in use, and queries and transactions waiting for a connection; undefined
   * where they are not known (PGlite queues inside its one connection and does not tell).
   */
  idle?: number | undefined;
  waiting?: number | undefined;
}

/** SQLSTATEs after which the whole transaction can safely be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 4;

export async function withRetry<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (n >= MAX_ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw error;
      // Jittered back-off, so that two transactions that collided do not collide again.
      await new Promise((done) => setTimeout(done, Math.random() * 20 * n));
    }
  }
}

/** What the upkeep has done in this process: how often it ran, and for how long in all. */
export interface UpkeepStats {
  runs: number;
  seconds: number;
}
