import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import { sendCancelRequest } from './cancel-request.js';
import { parseConnectionTargets } from './connection-url.js';
import { type Database, inTransaction, type Queryable, withRetry } from './database.js';
import { isConnectionError } from './failures.js';
import { multiHostClient, standInSince } from './multi-host-client.js';
import { POSTGRES_UPKEEP, TableUpkeep } from './table-upkeep.js';

export interface PostgresOptions {
  connectionString: string;
  poolSize: number;
  /** Reported to PostgreSQL, visible in pg_stat_activity. */
  applicationName?: string;
  onPoolError?: (error: Error) => void;
  /** Server-side bound of one statement inside a transaction (default 60 s). */
  statementTimeoutMs?: number;
  /** Wait for a connection of the pool, or for a new one to open (default 5 s). */
  acquireTimeoutMs?: number;
  /** How long a connection standing in for a primary is used (default 1 s; decision 0147). */
  standInLifeMs?: number;
}

const STATEMENT_TIMEOUT_MS = 60_000;
/** The client gives up a little after the server would have, so the server's error is the one seen. */
const CLIENT_MARGIN_MS = 2_000;
const ACQUIRE_TIMEOUT_MS = 5_000;
/** After the server refused a connection as one too many, the pool stays at its size for this long. */
const SHRUNK_FOR_MS = 10_000;
/**
 * A connection to a host that takes no writes, kept while no host does (src/db/multi-host-client.ts),
 * is used for this long and then ended: once a primary is back, reads reach it within a second.
 */
const STAND_IN_LIFE_MS = 1_000;
const STAND_IN_ENDED = new Error('connection standing in for a primary ended');

/** Where a cancel request for the statement a connection runs goes, and the key it carries. */
function cancelTarget(client: pg.PoolClient) {
  const { host, port, processID, secretKey } = client as unknown as {
    host: string;
    port: number;
    processID: number;
    secretKey: number;
  };
  return { host, port, processId: processID, secretKey };
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function queryable(client: pg.PoolClient): Queryable {
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

/** COPY ... FROM STDIN on the transaction's connection, the rows sent as one piece. */
async function copyInto(client: pg.PoolClient, sql: string, text: string | Uint8Array): Promise<void> {
  await pipeline(Readable.from([text]), client.query(copyFromStdin(sql)));
}

/**
 * PostgreSQL through a `pg` pool, directly or behind PgBouncer in transaction mode: no setting is sent
 * as a connection startup parameter (the pooler refuses those it does not know) and no session state
 * is relied on. Timeouts are enforced per transaction (SET LOCAL) and by the client on every query.
 */
export function openPostgres(options: PostgresOptions): Database {
  const statementTimeoutMs = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS;
  const acquireTimeoutMs = options.acquireTimeoutMs ?? ACQUIRE_TIMEOUT_MS;
  // libpq's multi-host form, or target_session_attrs: each new connection walks the hosts in order
  // (decision 0144). Any other URL is pg's own, read as it always was.
  const targets = parseConnectionTargets(options.connectionString);
  const pool = new pg.Pool({
    ...(targets
      ? { connectionString: targets.hosts[0]!.connectionString, Client: multiHostClient(targets) }
      : { connectionString: options.connectionString }),
    max: options.poolSize,
    application_name: options.applicationName ?? 'sfa-backoffice',
    // Fail fast instead of hanging when the database is down or overloaded.
    connectionTimeoutMillis: acquireTimeoutMs,
    // A query a pooler holds while its server is down, or a server that stopped answering, must not
    // hold the request: the client gives up, and the connection is discarded (see release below).
    query_timeout: statementTimeoutMs + CLIENT_MARGIN_MS,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', (error) => options.onPoolError?.(error));
  // A connection taken from the pool has no such listener: the server ending its session between two
  // statements (a failover, a fast shutdown, pg_terminate_backend) emits 'error' with no statement to
  // fail, and unheard that ends the process. Heard here and reported as the pool's own are (the
  // operator sees the server's reason, 57P01 and its message); the connection's next statement fails
  // as "not queryable", a connection error, and release() ends it instead of giving it back.
  // Once per session: pg emits the server's FATAL, then its own "Connection terminated unexpectedly".
  // (An idle connection's error already reaches the pool's 'error' above: only one in use is reported.)
  const inUse = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => inUse.add(client));
  pool.on('release', (_error, client) => inUse.delete(client));
  pool.on('connect', (client) =>
    client.on('error', (error) => {
      if (!inUse.delete(client)) return;
      options.onPoolError?.(error);
    }),
  );
  // One BEGIN round trip also bounds the transaction's statements and idle time on the server.
  const begin = `BEGIN; SET LOCAL statement_timeout = ${statementTimeoutMs}; SET LOCAL idle_in_transaction_session_timeout = ${statementTimeoutMs}`;

  const standInLifeMs = options.standInLifeMs ?? STAND_IN_LIFE_MS;
  /** A connection standing in for a primary (decision 0147) that has served its time. */
  const outlived = (client: pg.PoolClient) => {
    const since = standInSince(client);
    return since !== undefined && Date.now() - since >= standInLifeMs;
  };
  /** Stand-ins given back to the pool once: one past its life is ended when taken again. */
  const idleStandIns = new WeakSet<pg.PoolClient>();

  /** A connection of the pool that is not a stand-in past its life. */
  async function acquire(): Promise<pg.PoolClient> {
    for (;;) {
      const client = await acquireAny();
      if (!(idleStandIns.has(client) && outlived(client))) return client;
      client.release(STAND_IN_ENDED);
    }
  }

  /** Gives a connection back to the pool; error (or a stand-in past its life) ends it instead. */
  function giveBack(client: pg.PoolClient, error?: Error): void {
    const end = error ?? (outlived(client) ? STAND_IN_ENDED : undefined);
    if (end === undefined && standInSince(client) !== undefined) idleStandIns.add(client);
    client.release(end);
  }

  let restoreSize: NodeJS.Timeout | undefined;
  /**
   * A connection of the pool. When the server refuses a new one as one too many (53300: other
   * instances hold the rest of max_connections) while this pool holds connections of its own, the pool
   * stops growing for a while and the request waits for one of those, within the acquire timeout.
   */
  async function acquireAny(): Promise<pg.PoolClient> {
    const deadline = Date.now() + acquireTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        // The first attempt is bounded by the pool's own timeout, the same as the deadline: no
        // timer of ours on every query. Only a retry after 53300 needs the time that is left.
        return await (attempt === 1 ? pool.connect() : connectWithin(deadline - Date.now()));
      } catch (error) {
        if ((error as { code?: unknown }).code !== '53300' || pool.totalCount === 0) throw error;
        if (Date.now() + 50 >= deadline) throw error;
        pool.options.max = Math.max(1, pool.totalCount);
        clearTimeout(restoreSize);
        restoreSize = setTimeout(() => {
          pool.options.max = options.poolSize;
        }, SHRUNK_FOR_MS).unref();
        await sleep(Math.min(10 * attempt, 50));
      }
    }
  }

  /**
   * pool.connect(), given up after ms (the pool's own timeout restarts at every attempt of acquire's
   * loop). A connection that arrives after that is given back at once.
   */
  async function connectWithin(ms: number): Promise<pg.PoolClient> {
    const pending = pool.connect();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('timeout exceeded when trying to connect')), Math.max(ms, 0));
    });
    try {
      return await Promise.race([pending, expired]);
    } catch (error) {
      pending.then(
        (late) => giveBack(late),
        () => {},
      );
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Gives the connection back, or ends it when its state is unknown or its server is the wrong one:
   * a broken link, a client-side timeout (the statement may still run), or a server that no longer
   * accepts writes (a standby after a switchover): the pool then opens a new one, to the new primary.
   */
  function release(client: pg.PoolClient, error: unknown): void {
    giveBack(client, error !== undefined && isConnectionError(error) ? (error as Error) : undefined);
  }

  const database: Database = {
    backend: 'postgres',
    sharedByProcesses: true,
    // One statement however large: a round trip per chunk would cost more than it saves.
    statementRows: Number.POSITIVE_INFINITY,
    async query<Row>(text: string, params?: readonly unknown[]) {
      const client = await acquire();
      // Outside a transaction no SET LOCAL bounds the statement on the server: past the timeout the
      // client asks the server to cancel it, so it stops there too (a client that merely gave up
      // would leave it running). A connection a cancel was sent for is never reused: the cancel
      // may still reach its session after the statement ended.
      let cancelSent = false;
      const cancel = setTimeout(() => {
        cancelSent = true;
        void sendCancelRequest(cancelTarget(client));
      }, statementTimeoutMs);
      try {
        const result = await client.query(text, params as unknown[] | undefined);
        clearTimeout(cancel);
        giveBack(client, cancelSent ? new Error('statement cancelled') : undefined);
        return result.rows as Row[];
      } catch (error) {
        clearTimeout(cancel);
        if (cancelSent) giveBack(client, error as Error);
        else release(client, error);
        throw error;
      }
    },
    async exec(script: string) {
      await database.query(script);
    },
    async transaction(work) {
      return withRetry(async () => {
        const client = await acquire();
        try {
          await client.query(begin);
          const result = await work(
            inTransaction(queryable(client), (sql, text) => copyInto(client, sql, text)),
          );
          await client.query('COMMIT');
          giveBack(client);
          return result;
        } catch (error) {
          let broken = isConnectionError(error) ? error : undefined;
          if (broken === undefined) {
            try {
              await client.query('ROLLBACK');
            } catch (rollbackError) {
              // A client whose rollback failed is in an unknown state: end it rather than reuse it.
              broken = rollbackError;
            }
          }
          giveBack(client, broken as Error | undefined);
          throw error;
        }
      });
    },
    wrote: (table, rows) => upkeep.wrote(table, rows),
    async close() {
      clearTimeout(restoreSize);
      await pool.end();
    },
    poolStats: () => ({
      // Less than DB_POOL_SIZE for a while after the server refused a connection as one too many.
      max: pool.options.max,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
    upkeepStats: () => upkeep.stats(),
  };
  const upkeep = new TableUpkeep(database, POSTGRES_UPKEEP);
  return database;
}
