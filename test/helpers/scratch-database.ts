import { randomUUID } from 'node:crypto';
import pg from 'pg';

export interface ScratchDatabase {
  /** Connection string of the new, empty database. */
  readonly url: string;
  /** Drops the database (connections still open to it are ended first). */
  drop(): Promise<void>;
}

async function admin<T>(serverUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * A new empty database on the PostgreSQL server of serverUrl (TEST_DATABASE_URL), for tests that
 * must start from nothing or break a schema on purpose without touching the shared test database.
 */
export async function scratchPostgresDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const name = `sfa_scratch_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await admin(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
