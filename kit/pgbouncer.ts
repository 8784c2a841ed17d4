import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';

const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface Pgbouncer {
  /** serverUrl with the pooler's port: the same database, through PgBouncer. */
  url(serverUrl: string): string;
  /** Runs a command on the pooler's admin console (PAUSE, RESUME, SHOW ...). */
  admin(command: string): Promise<void>;
  /** The pooler's log so far: why it closed a client or server, as it says. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Debian's PgBouncer in front of the PostgreSQL of serverUrl, in transaction pooling mode (how many
 * instances share one server), on a free port, with nothing the service needs told to be ignored: no
 * ignore_startup_parameters. PgBouncer refuses to run as root, so as root it runs as `postgres`.
 */
export interface PgbouncerOptions {
  /**
   * The role PgBouncer logs in to the server as, whoever its client is (the [databases] entry's
   * user=): a server that behaves differently through this pooler than reached directly, as a role
   * with settings of its own does (default_transaction_read_only, say).
   */
  serverUser?: string;
}

export async function startPgbouncer(serverUrl: string, options: PgbouncerOptions = {}): Promise<Pgbouncer> {
  assert.ok(
    existsSync(PGBOUNCER),
    `PgBouncer is not installed at ${PGBOUNCER}: install Debian's package (apt-get install -y pgbouncer); .ci/run does`,
  );
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || userInfo().username;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sfa-pgbouncer-'));
  const asRoot = process.getuid?.() === 0;
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}${options.serverUser ? ` user=${options.serverUser}` : ''}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 8',
      'max_client_conn = 500',
      `admin_users = ${user}`,
      // The README's production settings: a short wait for a server, quick retries of a failed login.
      'query_wait_timeout = 10',
      'server_login_retry = 1',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
    ].join('\n'),
  );
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }));
    chownSync(dir, id('-u'), id('-g'));
  }
  const command = asRoot ? ['runuser', '-u', 'postgres', '--', PGBOUNCER] : [PGBOUNCER];
  // A process group of its own: as root, runuser stands between us and pgbouncer, and a signal to the
  // group reaches both; the exit hook stops it even if the test process ends without its cleanup.
  const child: ChildProcess = spawn(command[0]!, [...command.slice(1), join(dir, 'pgbouncer.ini')], {
    stdio: 'ignore',
    detached: true,
  });
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // Already gone.
    }
  };
  const killOnExit = () => signal('SIGKILL');
  process.once('exit', killOnExit);
  const log = () =>
    existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '';
  const deadline = Date.now() + 10_000;
  while (!log().includes('process up')) {
    assert.ok(Date.now() < deadline && child.exitCode === null, `PgBouncer did not start: ${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const pooled = (database: string) => {
    const url = new URL(serverUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };
  return {
    url: (target) => pooled(new URL(target).pathname.slice(1)),
    async admin(text) {
      const client = new pg.Client({ connectionString: pooled('pgbouncer') });
      await client.connect();
      try {
        await client.query(text);
      } finally {
        await client.end();
      }
    },
    log,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (child.exitCode === null) signal('SIGTERM');
      await exited;
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
