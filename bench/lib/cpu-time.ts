import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time (user + system) spent by the processes of a benchmark, read from /proc, so that a ratio
 * of two throughputs can be explained: on a machine whose cores PostgreSQL, the server and the
 * benchmark's client share, every millisecond one of them spends is taken from the others.
 * Linux only; elsewhere every figure is undefined.
 */

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

export interface CpuSplit {
  /** Every process named `postgres` (backends, WAL writer, checkpointer, ...). */
  postgres: number;
  /** The service's process (all its threads: the event loop, V8's helpers, worker threads). */
  server: number;
  /** This process: the benchmark's HTTP or SQL client. */
  client: number;
}

/** CPU milliseconds of one process, from /proc/<pid>/stat; 0 when it is gone. */
function processMs(pid: number | string): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // The command name, field 2, may hold spaces: the fields after it are counted from its ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

function commandOf(pid: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function postgresMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    if (commandOf(entry) === 'postgres') total += processMs(entry);
  }
  return total;
}

/** CPU milliseconds used so far by PostgreSQL's processes, the server's and this one. */
export function cpuNow(serverPid: number): CpuSplit | undefined {
  if (process.platform !== 'linux') return undefined;
  const own = process.cpuUsage();
  return { postgres: postgresMs(), server: processMs(serverPid), client: (own.user + own.system) / 1000 };
}

/**
 * What was spent between two readings. Processes that ended between them (connections closed) lose
 * their share: take the second reading before closing anything.
 */
export function cpuSpent(before: CpuSplit | undefined, after: CpuSplit | undefined): CpuSplit | undefined {
  if (!before || !after) return undefined;
  return {
    postgres: after.postgres - before.postgres,
    server: after.server - before.server,
    client: after.client - before.client,
  };
}
