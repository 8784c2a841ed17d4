import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../kit/free-port.js';

/*
 * A PostgreSQL cluster of the test's own (initdb, pg_ctl), for what a shared server cannot be put
 * through: stopped, its data folder copied cold and put back. Loopback only, trust authentication,
 * superuser `root`. PostgreSQL refuses to run as root, so as root its programs run as `postgres`
 * (as kit/pgbouncer.ts does) and the folder belongs to that user.
 */

/** The newest PostgreSQL installed by Debian's packages (the machine's, and the CI's). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((dir) => existsSync(join(dir, 'pg_ctl')));
  if (!found) throw new Error(`no PostgreSQL programs under ${root}`);
  return found;
}

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program (or cp) as the cluster's owner. */
function run(program: string, args: string[]): void {
  const command = asRoot ? ['runuser', '-u', 'postgres', '--', program, ...args] : [program, ...args];
  execFileSync(command[0]!, command.slice(1), { stdio: 'pipe' });
}

export interface PrivateCluster {
  /** The connection string of its `postgres` database. */
  readonly url: string;
  start(): void;
  /** A fast shutdown (sessions ended, a checkpoint): the folder is then a consistent cold copy. */
  stop(): void;
  /** A cold copy of the data folder (the cluster stopped), named by the caller. */
  copyData(name: string): void;
  /** The data folder replaced by a copy made before (the cluster stopped). */
  restoreData(name: string): void;
  /** Stops it if running and removes every file. */
  remove(): void;
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'sfa-cluster-'));
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const data = join(dir, 'data');
  const port = await freePort();
  run(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'root',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`;
  let running = false;
  const cluster: PrivateCluster = {
    url: `postgres://root@127.0.0.1:${port}/postgres`,
    start() {
      run(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', 'start']);
      running = true;
    },
    stop() {
      run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      running = false;
    },
    copyData(name) {
      run('cp', ['-a', data, join(dir, name)]);
    },
    restoreData(name) {
      run('rm', ['-rf', data]);
      run('cp', ['-a', join(dir, name), data]);
    },
    remove() {
      try {
        if (running) cluster.stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  cluster.start();
  return cluster;
}
