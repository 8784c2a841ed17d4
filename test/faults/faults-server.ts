import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  type ServerProcess as KitServerProcess,
  spawnServer,
  waitReady as waitUntilReady,
} from '../../kit/server-process.js';

/*
 * Machinery of the fault suite (npm run test:faults) besides its setup (./fault-suite.ts): the built
 * server as a child process, a watch on pg_stat_activity to hit a statement while it runs, and the
 * machine's PostgreSQL cluster stopped and started. Every child is killed by pid when its test ends
 * or the process exits. Processes come from kit/, shared with the benchmarks.
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

/** The server's log lines of an error (level 50, 60), a deadlock or a serialization failure. */
export function errorLines(server: ServerProcess): string[] {
  return server
    .logs()
    .split('\n')
    .filter(
      (line) =>
        /"level":(50|60)/.test(line) || /deadlock|"code":"40(P01|001)"|SQLSTATE 40(P01|001)/.test(line),
    );
}

export function waitReady(server: ServerProcess, timeoutMs: number): Promise<number> {
  return waitUntilReady(server, timeoutMs, () => server.logs().slice(-3000));
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
