import pg from 'pg';
import { type Database, type Queryable, withRetry } from './database.js';

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  /** Reported to PostgreSQL, visible in pg_stat_activity. */
  applicationName?: string;
  onPoolError?: (error: Error) => void;
}

function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await client.query(text, params as unknown[] | undefined);
      return result.rows as Row[];
    },
    async exec(script: string) {
      await client.query(script);
    },
  };
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize,
    application_name: options.applicationName ?? 'sfa-backoffice',
    // Fail fast instead of hanging when the database is down or overloaded.
    connectionTimeoutMillis: 5_000,
    statement_timeout: 60_000,
    idle_in_transaction_session_timeout: 60_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', (error) => options.onPoolError?.(error));
  const direct = queryable(pool);
  return {
    kind: 'postgres',
    query: direct.query,
    exec: direct.exec,
    async transaction(work) {
      return withRetry(async () => {
        const client = await pool.connect();
        let broken: Error | undefined;
        try {
          await client.query('BEGIN');
          const result = await work(queryable(client));
          await client.query('COMMIT');
          return result;
        } catch (error) {
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            broken = rollbackError as Error;
          }
          throw error;
        } finally {
          // A client whose rollback failed is in an unknown state: destroy it rather than reuse it.
          client.release(broken);
        }
      });
    },
    async close() {
      await pool.end();
    },
    poolStats: () => ({
      max: options.poolSize,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
  };
}
