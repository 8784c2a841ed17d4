import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { onCleanup } from './cleanup.js';

/** The production entry point: runs dist/, so `npm run build` must have run. */
export const CLI = fileURLToPath(new URL('../../bin/sfa-backoffice.js', import.meta.url));

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;

/** A port nobody listens on right now (the server takes it a moment later). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const address = probe.address();
  probe.close();
  await once(probe, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface ChildServer {
  readonly baseUrl: string;
  /** The server's process (node itself, not a shell), for reading /proc/<pid>/status. */
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `node bin/sfa-backoffice.js serve` with env on a free port and waits until /ready answers.
 * nodeArgs go before the script (e.g. --cpu-prof). Registers its own stop for cleanup.
 */
export async function startServer(
  env: NodeJS.ProcessEnv,
  nodeArgs: readonly string[] = [],
): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve'], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Last words of the server, shown when it fails; warnings pass through as they come.
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
    process.stderr.write(`[server] ${chunk}`);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit');
  // Last resort if the benchmark dies without running its cleanup.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);

  const stop = async () => {
    process.removeListener('exit', kill);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  onCleanup(`stop server pid ${child.pid}`, stop);

  const baseUrl = `http://127.0.0.1:${port}`;
  await waitReady(child, baseUrl, () => tail);
  return { baseUrl, pid: child.pid!, stop };
}

async function waitReady(child: ChildProcess, baseUrl: string, tail: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before ready:\n${tail()}`);
    }
    try {
      const response = await fetch(`${baseUrl}/ready`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`server not ready after ${READY_TIMEOUT_MS} ms:\n${tail()}`);
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
