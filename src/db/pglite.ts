import { PGlite } from '@electric-sql/pglite';
import { lockDataDir } from './data-dir-lock.js';
import { type Database, inTransaction, type Queryable, withRetry } from './database.js';
import { seedDataDir, templateTarball } from './pglite-template.js';
import { PGLITE_UPKEEP, TableUpkeep } from './table-upkeep.js';

/**
 * Rows per write statement on PGlite: its WebAssembly memory grows to fit the largest statement and
 * never gives it back. PostgreSQL gets one statement: a round trip per chunk would cost more than it
 * saves.
 */
export const PGLITE_STATEMENT_ROWS = 2_000;

/**
 * Settings of PGlite's own PostgreSQL, on top of PGlite's. Its shared memory lives in the WebAssembly
 * heap and is touched when it starts, so every MB of it is resident for the process's life: the
 * defaults (128 MB of shared_buffers, 100 connections' worth of locks and process slots) held 140 MB
 * that one connection never uses. The files stay in the operating system's page cache, so a smaller
 * buffer pool costs a system call on a miss, not a disk read
 * (docs/decisions/0109-pglite-sized-for-one-connection.md).
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '8MB',
  wal_buffers: '1MB',
  // One connection; a few slots to spare for PostgreSQL's own.
  max_connections: '10',
};

const startParams = [
  ...PGlite.defaultStartParams,
  ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
];

/**
 * Embedded PostgreSQL (WASM). PGlite has a single connection and serialises queries and
 * transactions itself: a query issued while a transaction runs waits for it to finish.
 * A data directory is held under its lock file from open to close (two processes would corrupt it);
 * dataDir undefined keeps everything in memory (tests).
 */
export async function openPglite(dataDir: string | undefined): Promise<Database> {
  const release = dataDir === undefined ? () => {} : lockDataDir(dataDir);
  let db: PGlite;
  try {
    // A new database starts as a copy of the template cluster (src/db/pglite-template.ts).
    if (dataDir === undefined) {
      db = await PGlite.create({ startParams, loadDataDir: await templateTarball() });
    } else {
      await seedDataDir(dataDir);
      db = await PGlite.create(dataDir, { startParams });
    }
  } catch (error) {
    release();
    throw error;
  }
  const wrap = (target: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await target.query<Row>(text, params as unknown[] | undefined);
      return result.rows;
    },
    async exec(script: string) {
      await target.exec(script);
    },
  });
  const direct = wrap(db);
  // No autovacuum here: without it a table never gets statistics nor a visibility map.
  const upkeep = new TableUpkeep(direct, PGLITE_UPKEEP);
  return {
    backend: 'pglite',
    // Its data directory is held under a lock file: one process at a time.
    sharedByProcesses: false,
    query: direct.query,
    exec: direct.exec,
    wrote: (table, rows) => upkeep.wrote(table, rows),
    statementRows: PGLITE_STATEMENT_ROWS,
    transaction: (work) =>
      withRetry(() =>
        db.transaction((tx) =>
          work(
            inTransaction(wrap(tx), async (sql, text) => {
              // PGlite has no client stream: COPY reads the rows from a blob it is given.
              await tx.query(sql.replace(/FROM STDIN$/, "FROM '/dev/blob'"), [], {
                blob: new Blob([text as string | Uint8Array<ArrayBuffer>]),
              });
            }),
          ),
        ),
      ),
    // One in-process connection, always open, and no pool in front of it.
    poolStats: () => ({ max: 1, total: 1 }),
    upkeepStats: () => upkeep.stats(),
    async close() {
      try {
        await db.close();
      } finally {
        release();
      }
    },
  };
}
