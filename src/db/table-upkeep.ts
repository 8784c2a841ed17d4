import type { Queryable, UpkeepStats } from './database.js';
import { ident } from './sql.js';

/** Rows written to a table since its last upkeep that call for the next one: a floor plus a share. */
const MIN_CHANGED_ROWS = 1_000;

/**
 * The columns of a table that some index reads or a partial index's predicate names (acknowledged_at
 * of deliveries_pending): the ones whose statistics steer our plans. A predicate is matched by word,
 * which can only add a column.
 */
const INDEXED_COLUMNS_SQL = `SELECT DISTINCT a.attname AS name
FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attisdropped
WHERE i.indrelid = $1::regclass
  AND (a.attnum = ANY (i.indkey)
       OR pg_get_expr(i.indpred, i.indrelid) ~ ('\\m' || a.attname || '\\M'))
ORDER BY a.attname`;

/** The table's rows as the planner last counted them (0 when never). */
const ROWS_SQL = 'SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = $1::regclass';

/**
 * What the upkeep runs, and after how many changed rows as a share of the table's rows at its last
 * upkeep (plus 1,000):
 * - PGlite has no autovacuum: VACUUM (ANALYZE) after 20 % (autovacuum's own rule, with a larger floor);
 * - PostgreSQL's autovacuum keeps statistics current in the background, but comes too late for the
 *   reads right after a bulk load into a table it never analysed: ANALYZE only where the table had no
 *   statistics (0 rows known) or grew more than tenfold. Every 20 % would put an ANALYZE into the
 *   request of most large batches (a 10,000-price upsert took 165 ms instead of 104 with it).
 */
export interface UpkeepPolicy {
  command: 'VACUUM (ANALYZE)' | 'ANALYZE';
  changedShare: number;
}

export const PGLITE_UPKEEP: UpkeepPolicy = { command: 'VACUUM (ANALYZE)', changedShare: 0.2 };
export const POSTGRES_UPKEEP: UpkeepPolicy = { command: 'ANALYZE', changedShare: 10 };

/**
 * Planner statistics that follow bulk loads at once. Without them a table loaded through the API is
 * planned as if it were empty: PostgreSQL's autovacuum analyses it only later (the first reads after
 * 100,000 customers took 270 ms instead of 6-10 ms), and PGlite has no autovacuum at all, so its tables
 * never get statistics (reltuples stays -1) nor a visibility map (every index-only scan of a count
 * visits the heap). After writes that changed at least 1,000 rows plus 20 % of the rows the table had
 * at its last upkeep (autovacuum's rule, with a larger floor), it runs the command on the indexed
 * columns only: measured on PGlite, 13 ms at 10,000 customers and 90 ms at 100,000, where a full
 * ANALYZE of the 40 columns took 232 ms and 1 s. It runs inside the request that crossed the
 * threshold, after its write committed, so that the integrator's next read is planned well.
 */
export class TableUpkeep {
  readonly #db: Queryable;
  readonly #policy: UpkeepPolicy;
  readonly #tables = new Map<string, { changed: number; rows: number; columns?: string }>();
  readonly #stats: UpkeepStats = { runs: 0, seconds: 0 };

  constructor(db: Queryable, policy: UpkeepPolicy) {
    this.#db = db;
    this.#policy = policy;
  }

  /**
   * Notes rows inserted, updated or deleted in a table; runs the upkeep when they are enough. Never
   * throws: the write it follows has committed, and a failed upkeep only leaves the statistics older
   * (it is tried again at the next threshold); the failure is reported as a process warning.
   */
  async wrote(table: string, rows: number): Promise<void> {
    try {
      await this.#wrote(table, rows);
    } catch (error) {
      process.emitWarning(`upkeep of table ${table} failed: ${(error as Error).message}`);
    }
  }

  async #wrote(table: string, rows: number): Promise<void> {
    let state = this.#tables.get(table);
    if (!state) {
      // From what the last upkeep (of any process on this directory) counted: a restart does not
      // make the first 1,000 rows written to a large table pay for a whole VACUUM.
      state = { changed: 0, rows: 0 };
      this.#tables.set(table, state);
      state.rows = await this.#rows(table);
    }
    state.changed += rows;
    if (state.changed < MIN_CHANGED_ROWS + this.#policy.changedShare * state.rows) return;
    state.changed = 0;
    if (state.columns === undefined) {
      const columns = await this.#db.query<{ name: string }>(INDEXED_COLUMNS_SQL, [table]);
      state.columns = columns.map((column) => ident(column.name)).join(', ');
    }
    const started = performance.now();
    try {
      await this.#db.exec(`${this.#policy.command} ${ident(table)} (${state.columns})`);
      state.rows = await this.#rows(table);
    } finally {
      this.#stats.runs++;
      this.#stats.seconds += (performance.now() - started) / 1000;
    }
  }

  /**
   * The runs so far and their time (GET /metrics): the upkeep lands inside the request that crossed a
   * threshold, so a latency outlier can be told from it, and a benchmark can take it out of a sample.
   * A failed run counts too, and the time includes the row count that follows: what the request bore.
   */
  stats(): UpkeepStats {
    return { ...this.#stats };
  }

  async #rows(table: string): Promise<number> {
    const [counted] = await this.#db.query<{ rows: number }>(ROWS_SQL, [table]);
    return counted?.rows ?? 0;
  }
}
