import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPostgres } from '../../src/db/postgres.js';
import { createTenant, type NewTenant } from '../../src/tenants/tenants.js';

/*
 * Shared machinery of the fault suite (npm run test:faults): a PostgreSQL it may disturb, the built
 * server as a child process, HTTP calls with credentials, and a watch on pg_stat_activity to hit a
 * statement while it runs. Every child is killed by pid when its test ends or the process exits.
 */

export const CLI = fileURLToPath(new URL('../../bin/sfa-backoffice.js', import.meta.url));
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

/** Runs work on a plain connection to url (to create and drop databases). */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A database of its own on the server of serverUrl (optionally migrated), with a pool for the test's
 * own SQL; drop() removes it.
 */
export async function faultDatabase(serverUrl: string, migrated = true) {
  const name = `sfa_faults_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db: Database = openPostgres({
    connectionString: url.toString(),
    poolSize: 3,
    applicationName: 'sfa-faults-test',
    onPoolError: () => {},
  });
  if (migrated) await migrate(db);
  return {
    url: url.toString(),
    name,
    db,
    async drop() {
      await db.close().catch(() => {});
      await withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const address = probe.address();
  await new Promise<void>((done) => probe.close(() => done()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface ServerProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything the process wrote to stdout and stderr (its JSON log lines). */
  logs(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** SIGKILL if still running, and wait for the exit. */
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts the built server (`node bin/sfa-backoffice.js serve`) on a free loopback port against
 * databaseUrl; waits for /ready unless told not to.
 */
export async function startServerProcess(
  databaseUrl: string,
  env: Record<string, string> = {},
  options: { waitReady?: boolean } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const keep = (chunk: Buffer) => {
    if (output.length < 20_000_000) output += chunk.toString();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      done({ code, signal });
    }),
  );
  const server: ServerProcess = {
    url: `http://127.0.0.1:${port}`,
    child,
    logs: () => output,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill() {
      if (server.alive()) child.kill('SIGKILL');
      await exited;
    },
  };
  if (options.waitReady !== false) await waitReady(server, 30_000);
  return server;
}

export async function waitReady(server: ServerProcess, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (!server.alive()) throw new Error(`server exited before ready:\n${server.logs().slice(-3000)}`);
    try {
      const response = await fetch(`${server.url}/ready`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok) return Date.now() - started;
    } catch {
      // not listening yet, or the database not yet back
    }
    await sleep(100);
  }
  throw new Error(`server not ready after ${timeoutMs} ms:\n${server.logs().slice(-3000)}`);
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
  const token = await call(`${baseUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: tenant.clientId,
      client_secret: tenant.clientSecret,
    }).toString(),
  });
  if (token.status !== 200) throw new Error(`POST /token: ${token.status} ${token.text}`);
  const headers = {
    'subscription-key': tenant.subscriptionKey,
    authorization: `Bearer ${token.body.access_token}`,
  };
  return {
    tenant,
    tenantId: tenant.tenantId,
    headers,
    secrets: [tenant.subscriptionKey, tenant.clientSecret, token.body.access_token as string],
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
