import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../kit/free-port.js';
import { until } from './until.js';

/*
 * A PostgreSQL 15 primary and a standby under pg_auto_failover (Debian's postgresql-15-auto-failover
 * and pg-auto-failover-cli), all on loopback: a monitor, and two nodes each run by its keeper
 * (`pg_autoctl run`). Decision 0145 says why pg_auto_failover rather than Patroni.
 *
 * pg_autoctl refuses to run as root: as root every command runs as `postgres`, in a directory that
 * user owns. XDG_CONFIG_HOME and XDG_DATA_HOME point into that directory, so the keepers' own files
 * (pg_autoctl.cfg, the state file) go with it when the drill ends. DRILL_KEEPER_LOGS=1 writes each
 * keeper's output to <dir>/<name>.log and keeps the directory, to see what a keeper did.
 */

const PG_AUTOCTL = '/usr/bin/pg_autoctl';
const PG_CTL = '/usr/lib/postgresql/15/bin/pg_ctl';
const run = promisify(execFile);

/**
 * The monitor's failure detection, shortened from its defaults (a 5 s health check, 20 s before a node
 * is unhealthy, 30 s for an unreachable primary to demote itself) so a promotion takes seconds rather
 * than most of a minute. What the drill measures depends on them: docs/reliability.md gives both.
 */
export const MONITOR_SETTINGS: Readonly<Record<string, string>> = {
  'pgautofailover.health_check_period': '1000',
  'pgautofailover.health_check_timeout': '1000',
  'pgautofailover.health_check_max_retries': '1',
  'pgautofailover.health_check_retry_delay': '500',
  'pgautofailover.node_considered_unhealthy_timeout': '5000',
  'pgautofailover.primary_demote_timeout': '10000',
};

export interface NodeState {
  name: string;
  port: number;
  reported: string;
  assigned: string;
}

export interface FailoverCluster {
  /** libpq's multi-host URL of the formation's database, with target_session_attrs=read-write. */
  readonly databaseUrl: string;
  /** Both nodes' states as the monitor has them. */
  states(): Promise<NodeState[]>;
  /** The node whose reported and assigned state is `primary` (or `wait_primary`), if any. */
  primary(): Promise<NodeState | undefined>;
  /** SIGKILLs a node's keeper and its postmaster at once, and keeps them down. */
  killNode(name: string): Promise<void>;
  /** Stops a node's WAL sender (SIGSTOP): its standby receives nothing more until the node dies. */
  freezeReplication(name: string): Promise<number>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** The database the service uses. */
  dbname: string;
  /** false: the standby does not count for the commit (asynchronous replication). */
  synchronous: boolean;
  log: (line: string) => void;
}

interface Keeper {
  name: string;
  pgdata: string;
  port: number;
  child: ChildProcess;
  /** The end of its output, for a failure's message. */
  tail(): string;
}

export function autoFailoverInstalled(): boolean {
  return existsSync(PG_AUTOCTL);
}

export async function startCluster(options: ClusterOptions): Promise<FailoverCluster> {
  assert.ok(
    autoFailoverInstalled(),
    `pg_auto_failover is not installed at ${PG_AUTOCTL}: apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli`,
  );
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'sfa-drill-'));
  // The keepers connect to their own servers as the OS user that ran initdb: a PGUSER, PGDATABASE or
  // PGPORT of the calling shell (CI exports PGUSER=root for the machine's PostgreSQL) would point them
  // at a role or a server of someone else.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('PG')),
  );
  const env = {
    ...inherited,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_RUNTIME_DIR: join(dir, 'runtime'),
    PG_CONFIG: '/usr/lib/postgresql/15/bin/pg_config',
    PGHOST: '127.0.0.1',
  };
  for (const sub of ['config', 'data', 'runtime']) mkdirSync(join(dir, sub));
  if (asRoot) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
    const [uid, gid] = [await id('-u'), await id('-g')];
    for (const path of [dir, join(dir, 'config'), join(dir, 'data'), join(dir, 'runtime')])
      chownSync(path, uid, gid);
  }
  const as = (args: string[]) => (asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args);
  const command = async (args: string[]) => {
    const [file, ...rest] = as([PG_AUTOCTL, ...args]);
    try {
      return (await run(file!, rest, { env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
    } catch (error) {
      const failure = error as { stderr?: string; message: string };
      throw new Error(`pg_autoctl ${args.join(' ')} failed: ${failure.stderr || failure.message}`);
    }
  };
  const keepers: Keeper[] = [];
  const spawnKeeper = (name: string, pgdata: string, port: number, createArgs: string[]): Keeper => {
    const [file, ...rest] = as([PG_AUTOCTL, ...createArgs, '--run']);
    // A process group of its own: SIGKILL to the group takes the keeper and the PostgreSQL it runs.
    const child = spawn(file!, rest, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let tail = '';
    const logFile = join(dir, `${name}.log`);
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-8000);
      if (process.env.DRILL_KEEPER_LOGS) appendFileSync(logFile, chunk);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => options.log(`keeper ${name} exited (${code ?? signal})`));
    const keeper = { name, pgdata, port, child, tail: () => tail };
    keepers.push(keeper);
    return keeper;
  };
  const killGroup = (keeper: Keeper, signal: NodeJS.Signals) => {
    try {
      process.kill(-keeper.child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  const killAll = () => {
    for (const keeper of keepers) killGroup(keeper, 'SIGKILL');
  };
  process.once('exit', killAll);

  try {
    const monitorPort = await freePort();
    const monitorData = join(dir, 'monitor');
    const common = ['--hostname', '127.0.0.1', '--auth', 'trust', '--no-ssl', '--pgctl', PG_CTL];
    spawnKeeper('monitor', monitorData, monitorPort, [
      'create',
      'monitor',
      '--pgdata',
      monitorData,
      '--pgport',
      String(monitorPort),
      ...common,
    ]);
    const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;

    const states = async (): Promise<NodeState[]> => {
      const text = await command(['show', 'state', '--pgdata', monitorData, '--json']);
      const rows = JSON.parse(text) as {
        nodename: string;
        nodeport: number;
        current_group_state: string;
        assigned_group_state: string;
      }[];
      return rows.map((row) => ({
        name: row.nodename,
        port: row.nodeport,
        reported: row.current_group_state,
        assigned: row.assigned_group_state,
      }));
    };
    // Until ok() holds (its failures: the monitor not up yet); the keepers' last words when it never does.
    const whenReady = async (what: string, ok: () => Promise<boolean>) => {
      try {
        await until(what, async () => ((await ok().catch(() => false)) ? true : undefined), 120_000, 250);
      } catch (error) {
        const tails = keepers.map((k) => `--- ${k.name}\n${k.tail()}`);
        throw new Error(`${(error as Error).message}\n${tails.join('\n')}`);
      }
    };

    await whenReady('the monitor answers', async () => {
      await run(
        'psql',
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(monitorPort),
          '-U',
          'postgres',
          '-d',
          'pg_auto_failover',
          '-c',
          'select 1',
        ],
        { env },
      );
      return true;
    });
    // One -c each: psql runs a -c of several statements as one transaction, where ALTER SYSTEM may not run.
    const settings = Object.entries(MONITOR_SETTINGS).flatMap(([name, value]) => [
      '-c',
      `ALTER SYSTEM SET ${name} = '${value}'`,
    ]);
    await run(
      'psql',
      [
        ...['-h', '127.0.0.1', '-p', String(monitorPort), '-U', 'postgres', '-d', 'pg_auto_failover'],
        ...['-v', 'ON_ERROR_STOP=1', ...settings, '-c', 'SELECT pg_reload_conf()'],
      ],
      { env },
    );

    const nodes: { name: string; port: number }[] = [];
    for (const name of ['node1', 'node2']) {
      const port = await freePort();
      const pgdata = join(dir, name);
      const quorum = name === 'node1' || options.synchronous ? 'true' : 'false';
      spawnKeeper(name, pgdata, port, [
        ...['create', 'postgres', '--pgdata', pgdata, '--pgport', String(port), '--name', name],
        ...['--monitor', monitorUrl, '--dbname', options.dbname, '--replication-quorum', quorum],
        ...common,
      ]);
      nodes.push({ name, port });
      const wanted = name === 'node1' ? ['single'] : ['primary', 'secondary'];
      await whenReady(`${name} joins`, async () => {
        const now = await states();
        if (name !== 'node1') {
          // The standby's base backup waits for a checkpoint, which pg_autoctl does not ask to be fast:
          // a spread one takes most of checkpoint_timeout. A CHECKPOINT on the primary ends it at once.
          await run(
            'psql',
            [
              '-h',
              '127.0.0.1',
              '-p',
              String(nodes[0]!.port),
              '-U',
              'postgres',
              '-d',
              options.dbname,
              '-c',
              'CHECKPOINT',
            ],
            { env },
          );
        }
        return wanted.every((state) =>
          now.some((node) => node.reported === state && node.assigned === state),
        );
      });
      options.log(
        `${name} on port ${port}: ${(await states()).map((n) => `${n.name} ${n.reported}`).join(', ')}`,
      );
    }

    const hosts = nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
    const databaseUrl = `postgres://postgres@${hosts}/${options.dbname}?target_session_attrs=read-write`;

    const postmasterPid = (keeper: Keeper) =>
      Number(readFileSync(join(keeper.pgdata, 'postmaster.pid'), 'utf8').split('\n', 1)[0]);
    const keeperOf = (name: string) => {
      const keeper = keepers.find((k) => k.name === name);
      assert.ok(keeper, `no node ${name}`);
      return keeper;
    };

    return {
      databaseUrl,
      states,
      async primary() {
        const now = await states();
        return now.find((n) => ['primary', 'wait_primary'].includes(n.reported) && n.reported === n.assigned);
      },
      async killNode(name) {
        const keeper = keeperOf(name);
        const postmaster = postmasterPid(keeper);
        const exited = new Promise((done) => keeper.child.once('exit', done));
        killGroup(keeper, 'SIGKILL');
        try {
          process.kill(postmaster, 'SIGKILL');
        } catch {
          // It went with its keeper's group.
        }
        await exited;
      },
      async freezeReplication(name) {
        const keeper = keeperOf(name);
        const { stdout } = await run('pgrep', ['-f', `postgres: .*walsender`]);
        const postmaster = postmasterPid(keeper);
        const senders: number[] = [];
        for (const pid of stdout.split('\n').filter(Boolean).map(Number)) {
          const status = readFileSync(`/proc/${pid}/status`, 'utf8');
          if (new RegExp(`^PPid:\\s+${postmaster}$`, 'm').test(status)) senders.push(pid);
        }
        for (const pid of senders) process.kill(pid, 'SIGSTOP');
        return senders.length;
      },
      async stop() {
        for (const keeper of keepers.reverse()) {
          if (keeper.child.exitCode !== null || keeper.child.signalCode !== null) continue;
          const exited = new Promise((done) => keeper.child.once('exit', done));
          killGroup(keeper, 'SIGTERM');
          const timer = setTimeout(() => killGroup(keeper, 'SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        }
        // A frozen WAL sender or a postmaster left by a killed keeper: nothing outlives the drill.
        killAll();
        process.off('exit', killAll);
        if (!process.env.DRILL_KEEPER_LOGS) rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    // Nothing of a cluster that did not come up outlives the drill (its files kept with DRILL_KEEPER_LOGS).
    killAll();
    process.off('exit', killAll);
    if (!process.env.DRILL_KEEPER_LOGS) rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
