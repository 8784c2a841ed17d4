import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { cleanupAll } from './cleanup.js';
import { PG_ADMIN_URL, rawPostgres } from './databases.js';

export function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw ? Number(raw) : fallback;
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name}: ${min} to ${max}`);
  return value;
}

export function envList<T extends string>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw) return [...all];
  const chosen = raw.split(',').map((s) => s.trim()) as T[];
  const unknown = chosen.filter((item) => !all.includes(item));
  if (unknown.length > 0)
    throw new Error(`${name}: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return chosen;
}

export const load1 = () => loadavg()[0]!.toFixed(2);

/** What ran and where: the figures mean little without it. */
export async function describeMachine(withPostgres: boolean): Promise<string> {
  let postgres = '';
  if (withPostgres) {
    const client = await rawPostgres(PG_ADMIN_URL);
    const [row] = await client.query<{ server_version: string }>('SHOW server_version');
    await client.close();
    postgres = `, PostgreSQL ${row?.server_version}`;
  }
  let tree = '';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean).length;
    tree = `, tree ${head}${dirty ? ` + ${dirty} changed/new files under src/` : ''}`;
  } catch {
    // not a git checkout
  }
  return `Node ${process.version}, ${cpus().length} CPUs${postgres}${tree}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}

/**
 * Runs a benchmark's main: cleanup of every server, database and temp dir at the end and on failure,
 * the exit code set, and the process ended (a keep-alive socket or pool timer must not hold it open).
 */
export async function benchMain(main: () => Promise<void>): Promise<never> {
  try {
    await main();
  } catch (error) {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exitCode = 1;
  } finally {
    await cleanupAll();
  }
  process.exit(process.exitCode ?? 0);
}
