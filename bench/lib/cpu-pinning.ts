import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
 * every process it started) and puts each one's back at cleanup. Refuses when PostgreSQL is not a
 * local process (another host, a container) or the postmaster cannot be pinned. Needs the right to change those processes'
 * affinity (root, or the PostgreSQL user). A benchmark killed with SIGKILL leaves PostgreSQL pinned
 * until `taskset -a -p -c 0-N` on its processes or a restart.
 */
/** The CPUs a process may run on now, as taskset's list ("0-1"), from /proc/<pid>/status. */
function allowedCpus(pid: string): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

const commandOf = (pid: number) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim();

export async function pinPostgresApart(): Promise<string> {
  const count = cpus().length;
  if (count < 2) throw new Error('pinning needs at least 2 CPUs');
  const admin = await rawPostgres(PG_ADMIN_URL);
  const [row] = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
  );
  await admin.close();
  if (!row) throw new Error('no checkpointer found to find the postmaster by');
  // The checkpointer's pid is PostgreSQL's view: on this machine only if it is a local postgres.
  const postmaster = Number(
    execFileSync('ps', ['-o', 'ppid=', '-p', String(row.pid)], { encoding: 'utf8' }).trim(),
  );
  if (commandOf(row.pid) !== 'postgres' || postmaster <= 1 || commandOf(postmaster) !== 'postgres') {
    throw new Error('PostgreSQL does not run on this machine as the benchmark sees it: not pinned');
  }
  const postgresPids = () =>
    execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .concat(String(postmaster));
  const pin = (cpuList: string, pid: string): void => {
    execFileSync('taskset', ['-a', '-c', '-p', cpuList, pid], { stdio: 'ignore' });
  };
  // Each process back to what it had; new backends get the postmaster's.
  const before = new Map(postgresPids().map((pid) => [pid, allowedCpus(pid)]));
  const postmasterCpus = before.get(String(postmaster))!;
  const ownCpus = allowedCpus(String(process.pid))!;
  onCleanup('PostgreSQL back on its CPUs', () => {
    for (const pid of postgresPids()) {
      try {
        pin(before.get(pid) ?? postmasterCpus, pid);
      } catch {
        // a backend that ended meanwhile
      }
    }
  });
  onCleanup('this process back on its CPUs', () => pin(ownCpus, String(process.pid)));
  pin('0', String(postmaster));
  if (allowedCpus(String(postmaster)) !== '0') throw new Error('the postmaster could not be pinned');
  for (const pid of postgresPids()) {
    try {
      pin('0', pid);
    } catch {
      // a backend that ended meanwhile
    }
  }
  const others = count === 2 ? '1' : `1-${count - 1}`;
  // The server started after this inherits the benchmark's affinity.
  pin(others, String(process.pid));
  return `PostgreSQL pinned to CPU 0, the service and the benchmark to CPU ${others}`;
}
