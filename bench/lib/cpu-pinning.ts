import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { onCleanup } from './cleanup.js';
import { PG_ADMIN_URL, rawPostgres } from './databases.js';

/**
 * The topology of a production deployment on one benchmark machine: PostgreSQL on a core of its own,
 * the service and the benchmark's client on the others (`taskset`, Linux). On a machine whose cores
 * all three share, the service's own CPU is taken from the database and a throughput ratio measures
 * CPU cost; with the database alone on its core, it measures whether the service keeps the
 * database busy, as it would on a database server of its own.
 *
 * Changes the affinity of the running PostgreSQL (the postmaster, so new backends inherit it, and
 * every process it started) and puts it back at cleanup. Needs the right to change those processes'
 * affinity (root, or the PostgreSQL user). A benchmark killed with SIGKILL leaves PostgreSQL pinned
 * until `taskset -a -p -c 0-N` on its processes or a restart.
 */
export async function pinPostgresApart(): Promise<string> {
  const count = cpus().length;
  if (count < 2) throw new Error('pinning needs at least 2 CPUs');
  const admin = await rawPostgres(PG_ADMIN_URL);
  const [row] = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
  );
  await admin.close();
  if (!row) throw new Error('no checkpointer found to find the postmaster by');
  const postmaster = Number(
    execFileSync('ps', ['-o', 'ppid=', '-p', String(row.pid)], { encoding: 'utf8' }).trim(),
  );
  const everyCpu = `0-${count - 1}`;
  const others = count === 2 ? '1' : `1-${count - 1}`;
  const postgresPids = () =>
    execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .concat(String(postmaster));
  const pin = (cpuList: string, pids: readonly string[]) => {
    for (const pid of pids) {
      try {
        execFileSync('taskset', ['-a', '-c', '-p', cpuList, pid], { stdio: 'ignore' });
      } catch {
        // a backend that ended meanwhile
      }
    }
  };
  onCleanup('PostgreSQL back on every CPU', () => pin(everyCpu, postgresPids()));
  onCleanup('this process back on every CPU', () => pin(everyCpu, [String(process.pid)]));
  pin('0', postgresPids());
  // The server started after this inherits the benchmark's affinity.
  pin(others, [String(process.pid)]);
  return `PostgreSQL pinned to CPU 0, the service and the benchmark to CPU ${others}`;
}
