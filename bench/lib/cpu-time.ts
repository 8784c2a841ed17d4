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

/** CPU milliseconds and start time (ticks since boot) of one process; undefined when it is gone. */
function statOf(pid: string): { ms: number; start: string } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name, field 2, may hold spaces: the fields after it are counted from its ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND, start: fields[19]! };
}

function commandOf(pid: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Per PostgreSQL process (pid and start time, so a reused pid is another process), its CPU ms. */
function postgresProcesses(): Map<string, number> {
  const found = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    if (commandOf(entry) !== 'postgres') continue;
    const stat = statOf(entry);
    if (stat) found.set(`${entry}:${stat.start}`, stat.ms);
  }
  return found;
}

export interface CpuReading {
  postgres: Map<string, number>;
  server: number;
  client: number;
}

/** CPU milliseconds used so far by PostgreSQL's processes, the server's and this one. */
export function cpuNow(serverPid: number): CpuReading | undefined {
  if (process.platform !== 'linux') return undefined;
  const own = process.cpuUsage();
  return {
    postgres: postgresProcesses(),
    server: statOf(String(serverPid))?.ms ?? 0,
    client: (own.user + own.system) / 1000,
  };
}

/**
 * What was spent between two readings. A PostgreSQL process that started between them counts
 * whole; one that ended between them (a connection closed) loses its share: take the second reading
 * before closing anything.
 */
export function cpuSpent(
  before: CpuReading | undefined,
  after: CpuReading | undefined,
): CpuSplit | undefined {
  if (!before || !after) return undefined;
  let postgres = 0;
  for (const [id, ms] of after.postgres) postgres += ms - (before.postgres.get(id) ?? 0);
  return { postgres, server: after.server - before.server, client: after.client - before.client };
}
