import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import { CLI } from '../../kit/server-process.js';
import { onCleanup } from './cleanup.js';
import { serverEnv } from './server.js';

const run = promisify(execFile);

/** Server to create the benchmark databases on: a maintenance database URL. */
export const PG_ADMIN_URL = process.env.BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/postgres';

/**
 * A fresh, empty PostgreSQL database (kit/scratch-database.ts, sfa_bench_*), dropped at cleanup
 * (connections included). Creating and dropping are retried for half a minute while the server is
 * unreachable or restarting (others on this machine restart it). Returns its URL.
 */
export async function createPgDatabase(): Promise<string> {
  const scratch = await scratchPostgresDatabase(PG_ADMIN_URL, {
    prefix: 'sfa_bench',
    retryWhileRestarting: true,
  });
  onCleanup(`drop database ${scratch.name}`, scratch.drop);
  return scratch.url;
}

/** Lost connections (a restarted server) must fail the query in flight, not end the process. */
const ignoreIdleError = (client: { on(event: 'error', listener: (error: Error) => void): unknown }) =>
  client.on('error', (error) => console.error(`  (connection lost: ${error.message})`));

/** A fresh temp dir, removed at cleanup. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The few calls the raw side makes, on either driver, without the service's Database wrapper. */
export interface RawClient {
  query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

export async function rawPostgres(url: string): Promise<RawClient> {
  const client = new pg.Client({ connectionString: url, application_name: 'sfa-bench-raw' });
  ignoreIdleError(client);
  await client.connect();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await client.end();
  };
  onCleanup('close raw pg client', close);
  return {
    async query<Row>(sql: string, params?: readonly unknown[]) {
      return (await client.query(sql, params as unknown[] | undefined)).rows as Row[];
    },
    close,
  };
}

/**
 * An in-process PGlite of its own in a temp dir, its schema made by the product's own command
 * (`sfa-backoffice migrate` with DATA_DIR), which exits before the directory is opened here.
 */
export async function rawPglite(): Promise<RawClient> {
  const dir = tempDir('sfa-bench-raw-pglite-');
  await migrateWithCli({ ...serverEnv(), DATA_DIR: dir });
  const db = await PGlite.create(dir);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await db.close();
  };
  onCleanup('close raw PGlite', close);
  return {
    async query<Row>(sql: string, params?: readonly unknown[]) {
      return (await db.query<Row>(sql, params as unknown[] | undefined)).rows;
    },
    close,
  };
}

/** `sfa-backoffice migrate` as a child process on the database env names (DATABASE_URL or DATA_DIR). */
export async function migrateWithCli(env: NodeJS.ProcessEnv): Promise<void> {
  await run(process.execPath, [CLI, 'migrate'], { env });
}

/** A tenant of the raw side's own: INSERT INTO tenants(name). */
export async function createRawTenant(client: RawClient): Promise<number> {
  const [row] = await client.query<{ id: number }>('INSERT INTO tenants (name) VALUES ($1) RETURNING id', [
    `bench-raw-${randomBytes(4).toString('hex')}`,
  ]);
  return row!.id;
}

export async function tenantId(client: RawClient, name: string): Promise<number> {
  const [row] = await client.query<{ id: number }>('SELECT id FROM tenants WHERE name = $1', [name]);
  if (!row) throw new Error(`no tenant named ${name}`);
  return row.id;
}

/** Products for the raw side: a direct INSERT, not the batch pipeline. */
export async function insertRawProducts(
  client: RawClient,
  tenant: number,
  codes: readonly string[],
): Promise<void> {
  await client.query(
    `INSERT INTO products (tenant_id, code, description, unit, tax, state, created_at)
     SELECT $1, c, 'Benchmark product ' || c, 'UND', 19, 'Y', now() AT TIME ZONE 'UTC'
     FROM unnest($2::text[]) AS c`,
    [tenant, codes],
  );
}

/** A pg pool of `size` connections (the raw side of a concurrent benchmark), same driver as the service. */
export async function rawPostgresPool(url: string, size: number): Promise<RawClient> {
  const pool = new pg.Pool({ connectionString: url, max: size, application_name: 'sfa-bench-raw' });
  ignoreIdleError(pool);
  // Open every connection before any clock starts.
  const clients = await Promise.all(Array.from({ length: size }, () => pool.connect()));
  for (const client of clients) client.release();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await pool.end();
  };
  onCleanup('close raw pg pool', close);
  return {
    async query<Row>(sql: string, params?: readonly unknown[]) {
      return (await pool.query(sql, params as unknown[] | undefined)).rows as Row[];
    },
    close,
  };
}

/** An in-process PGlite on an existing data directory (no migrations run). */
export async function rawPgliteAt(dir: string): Promise<RawClient> {
  const db = await PGlite.create(dir);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await db.close();
  };
  onCleanup(`close PGlite ${dir}`, close);
  return {
    async query<Row>(sql: string, params?: readonly unknown[]) {
      return (await db.query<Row>(sql, params as unknown[] | undefined)).rows;
    },
    close,
  };
}

/** Runs a maintenance statement (VACUUM) on a database URL with a connection of its own. */
export async function postgresCommand(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  ignoreIdleError(client);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
