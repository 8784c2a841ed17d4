import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface ScratchDatabase {
  /** Connection string of the new, empty database. */
  readonly url: string;
  /** Its name (pg_stat_activity's datname). */
  readonly name: string;
  /** Drops the database (connections still open to it are ended first). */
  drop(): Promise<void>;
}

export interface ScratchOptions {
  /** Start of the database's name, a random suffix follows: sfa_scratch (tests), sfa_bench, ... */
  prefix?: string;
  /**
   * Retry the CREATE and DROP for half a minute while the server is unreachable or restarting
   * (others on a shared machine restart it), so a drop at a benchmark's cleanup is not lost.
   */
  retryWhileRestarting?: boolean;
}

/** Connection errors that a server restart causes: the statement may be tried again. */
function transient(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === undefined || code === '57P01' || code === '57P03' || code === 'ECONNREFUSED';
}

/** One statement on a connection of its own to url (the server's maintenance database). */
export async function adminStatement(url: string, sql: string, retry = false): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({ connectionString: url });
    // A lost connection fails the statement in flight, it does not end the process.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query(sql);
      return;
    } catch (error) {
      if (!retry || !transient(error) || attempt >= 15) throw error;
    } finally {
      await client.end().catch(() => {});
    }
    await new Promise((done) => setTimeout(done, 2_000));
  }
}

/**
 * A new empty database on the PostgreSQL server of serverUrl, for tests and benchmarks that must start
 * from nothing, or break a schema on purpose, without touching a shared database.
 */
export async function scratchPostgresDatabase(
  serverUrl: string,
  options: ScratchOptions = {},
): Promise<ScratchDatabase> {
  const name = `${options.prefix ?? 'sfa_scratch'}_${randomBytes(8).toString('hex')}`;
  const retry = options.retryWhileRestarting ?? false;
  await adminStatement(serverUrl, `CREATE DATABASE ${name}`, retry);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => adminStatement(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, retry),
  };
}
