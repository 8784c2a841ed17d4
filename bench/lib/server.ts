import { readFileSync, writeFileSync } from 'node:fs';
import { freePort } from '../../kit/free-port.js';
import { CLI, spawnServer, waitReady } from '../../kit/server-process.js';
import { onCleanup } from './cleanup.js';

export { CLI, freePort };

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

export interface ChildServer {
  readonly baseUrl: string;
  /** The server's process (node itself, not a shell), for reading /proc/<pid>/status. */
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `node bin/sfa-backoffice.js serve` with env on a free port (kit/server-process.ts) and waits
 * until /ready answers. nodeArgs go before the script (e.g. --cpu-prof); cli is another build's command
 * for a comparison. Registers its own stop for cleanup.
 */
export async function startServer(
  env: NodeJS.ProcessEnv,
  nodeArgs: readonly string[] = [],
  cli: string = CLI,
): Promise<ChildServer> {
  // Last words of the server, shown when it fails; warnings pass through as they come.
  let tail = '';
  const server = await spawnServer({
    env: { ...env, LOG_LEVEL: env.LOG_LEVEL ?? 'warn' },
    nodeArgs,
    cli,
    onOutput: (chunk) => {
      tail = (tail + chunk.toString()).slice(-4000);
      process.stderr.write(`[server] ${chunk}`);
    },
  });
  const stop = () => server.stop(STOP_TIMEOUT_MS);
  onCleanup(`stop server pid ${server.pid}`, stop);
  await waitReady(server, READY_TIMEOUT_MS, () => tail);
  return { baseUrl: server.url, pid: server.pid, stop };
}

/**
 * The environment a benchmark server (and its command line) runs with: the caller's environment
 * without DATABASE_URL/DATA_DIR (the caller sets one), LOG_LEVEL=warn, and the rate limit per
 * subscription key high enough never to refuse a benchmark request while still doing its work per
 * request (BENCH_RATE_LIMIT, default 1,000,000 a minute; 0 turns the limiter off).
 */
export function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  delete env.DATA_DIR;
  env.RATE_LIMIT_PER_MINUTE = process.env.BENCH_RATE_LIMIT ?? '1000000';
  return env;
}

/** VmRSS and VmHWM (peak RSS) of a process, in kB, from /proc/<pid>/status. */
export function memoryOf(pid: number): { rssKb: number; peakKb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!match) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(match[1]);
  };
  return { rssKb: field('VmRSS'), peakKb: field('VmHWM') };
}

/** Resets VmHWM to the current RSS (Linux: "5" to /proc/<pid>/clear_refs). False if not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
