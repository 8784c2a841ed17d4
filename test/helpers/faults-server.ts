import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../kit/free-port.js';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import {
  type ServerProcess as KitServerProcess,
  spawnServer,
  waitReady as waitUntilReady,
} from '../../kit/server-process.js';
import { fetchedHeaders } from '../../kit/token.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';

/*
 * Shared machinery of the fault suite (npm run test:faults): a PostgreSQL it may disturb, the built
 * server as a child process, HTTP calls with credentials, and a watch on pg_stat_activity to hit a
 * statement while it runs. Every child is killed by pid when its test ends or the process exits.
 * Databases, ports, processes and tokens come from kit/, shared with the benchmarks.
 */

const BUILT = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** TEST_DATABASE_URL, or a clear failure: these tests cannot run without a PostgreSQL to disturb. */
export function requireDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    throw new Error(
      'npm run test:faults needs TEST_DATABASE_URL=postgres://user@127.0.0.1:5432/db: a PostgreSQL it may ' +
        'kill connections of, stop and start (see docs/reliability.md). It is unset, so nothing was tested.',
    );
  }
  if (!existsSync(BUILT)) throw new Error('dist/ is missing: run `npm run build` first (test:faults does)');
  return url;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** The value of promise, or undefined when it takes longer than ms (the timer never holds the process). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((done) => {
    timer = setTimeout(() => done(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A database of its own on the server of serverUrl (optionally migrated), with a pool for the test's
 * own SQL; drop() removes it.
 */
export async function faultDatabase(serverUrl: string, migrated = true) {
  const scratch = await scratchPostgresDatabase(serverUrl, { prefix: 'sfa_faults' });
  const db: Database = openPostgres({
    connectionString: scratch.url,
    poolSize: 3,
    applicationName: 'sfa-faults-test',
    onPoolError: () => {},
  });
  if (migrated) await migrate(db);
  return {
    url: scratch.url,
    name: scratch.name,
    db,
    async drop() {
      await db.close().catch(() => {});
      await scratch.drop();
    },
  };
}

export { freePort };

export interface ServerProcess extends KitServerProcess {
  /** Everything the process wrote to stdout and stderr (its JSON log lines). */
  logs(): string;
}

/**
 * Starts the built server (`node bin/sfa-backoffice.js serve`) on a free loopback port against
 * databaseUrl; waits for /ready unless told not to.
 */
export async function startServerProcess(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: { waitReady?: boolean } = {},
): Promise<ServerProcess> {
  let output = '';
  const server = await spawnServer({
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0', ...env },
    onOutput: (chunk) => {
      if (output.length < 20_000_000) output += chunk.toString();
    },
  });
  const logged: ServerProcess = { ...server, logs: () => output };
  if (options.waitReady !== false) await waitReady(logged, 30_000);
  return logged;
}

export function waitReady(server: ServerProcess, timeoutMs: number): Promise<number> {
  return waitUntilReady(server, timeoutMs, () => server.logs().slice(-3000));
}

export interface Answer {
  status: number;
  body: any;
  text: string;
  ms: number;
}

/** One HTTP call; a network failure (the server gone) is status 0 with the error in text. */
export async function call(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = Date.now();
  try {
    const response = await fetch(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      body: init.body,
      signal: AbortSignal.timeout(init.timeoutMs ?? 60_000),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, body, text, ms: Date.now() - started };
  } catch (error) {
    return {
      status: 0,
      body: undefined,
      text: String((error as Error).cause ?? error),
      ms: Date.now() - started,
    };
  }
}

/** A new tenant in the database and a token for it from the server at baseUrl. */
export async function tenantOn(db: Database, baseUrl: string) {
  const tenant: NewTenant = await createTenant(db, `faults-${randomUUID()}`);
  const headers = await fetchedHeaders(baseUrl, tenant);
  return {
    tenant,
    tenantId: tenant.tenantId,
    headers,
    secrets: [tenant.subscriptionKey, tenant.clientSecret, headers.authorization.slice('Bearer '.length)],
    post: (base: string, path: string, body: unknown, timeoutMs?: number) =>
      call(`${base}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
        timeoutMs,
      }),
    get: (base: string, path: string, timeoutMs?: number) => call(`${base}${path}`, { headers, timeoutMs }),
  };
}

/** A plain connection for the test's own look at the server: pg_stat_activity, pg_terminate_backend. */
export async function adminClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'sfa-faults-admin' });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Waits until a statement of the service (application_name sfa-backoffice) whose text starts with
 * `prefix` is running in the database `datname`; returns its backend pid, or undefined on timeout.
 */
export async function waitForStatement(
  admin: pg.Client,
  datname: string,
  prefix: string,
  timeoutMs: number,
): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = $1 AND application_name = 'sfa-backoffice' AND state = 'active'
         AND left(ltrim(query), $3) = $2`,
      [datname, prefix, prefix.length],
    );
    if (rows[0]) return rows[0].pid;
    await sleep(2);
  }
  return undefined;
}

/** Waits until no statement of the service runs in the database any more (the backend finished). */
export async function waitIdle(admin: pg.Client, datname: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const { rows } = await admin.query(
      `SELECT 1 FROM pg_stat_activity
       WHERE datname = $1 AND application_name = 'sfa-backoffice' AND state <> 'idle'`,
      [datname],
    );
    if (rows.length === 0) return;
    await sleep(20);
  }
  throw new Error(`statements of the service still running after ${timeoutMs} ms`);
}

const run = promisify(execFile);

/** The PostgreSQL cluster of this machine (pg_ctlcluster), for the outage test. */
export async function postgresCluster(action: 'start' | 'stop'): Promise<void> {
  const { stdout } = await run('ls', ['/etc/postgresql']);
  const version = stdout.trim().split(/\s+/)[0]!;
  const args = ['--skip-systemctl-redirect', version, 'main', action];
  if (action === 'stop') args.push('-m', 'fast');
  await run('pg_ctlcluster', args, { timeout: 60_000 });
}

export async function postgresIsReady(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
