import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';

/** The production entry point: runs dist/, so `npm run build` must have run. */
export const CLI = fileURLToPath(new URL('../bin/sfa-backoffice.js', import.meta.url));

/**
 * How the command starts, from its first line (`#!/usr/bin/env -S NAME=value ... node <options>`): the
 * environment it sets and node's options. A server started here runs as `sfa-backoffice serve` and
 * `npm start` run it.
 */
export function cliLaunch(cli = CLI): { env: Record<string, string>; nodeOptions: string[] } {
  const shebang = readFileSync(cli, 'utf8').split('\n', 1)[0]!;
  const match = /^#!\/usr\/bin\/env(?: -S)? (.*)$/.exec(shebang);
  const words = (match?.[1] ?? '').split(' ').filter(Boolean);
  const at = words.indexOf('node');
  if (at < 0) throw new Error(`${cli} does not start with a node shebang: ${shebang}`);
  const env = Object.fromEntries(
    words.slice(0, at).map((word) => {
      const [name, ...value] = word.split('=');
      return [name!, value.join('=')];
    }),
  );
  return { env, nodeOptions: words.slice(at + 1) };
}

export interface ServerProcess {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly child: ChildProcess;
  /** The server's process (node itself, not a shell), for /proc/<pid>/status. */
  readonly pid: number;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  /** SIGKILL if still running, and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM if still running (SIGKILL after timeoutMs), and wait for the exit. */
  stop(timeoutMs?: number): Promise<void>;
}

export interface ServeOptions {
  /** The whole environment of the process (PORT and HOST are set here). */
  env: NodeJS.ProcessEnv;
  /** Node options before the script (--cpu-prof, --import). */
  nodeArgs?: readonly string[];
  /** Every chunk the process writes to stdout and stderr (its JSON log lines). */
  onOutput?: (chunk: Buffer) => void;
  /** The command to run: this tree's by default, another build's for a comparison. */
  cli?: string;
}

// Last resort when the caller dies without stopping its servers: none outlives the process.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `node bin/sfa-backoffice.js serve` on a free loopback port; does not wait for /ready. */
export async function spawnServer(options: ServeOptions): Promise<ServerProcess> {
  const port = await freePort();
  const cli = options.cli ?? CLI;
  const launch = cliLaunch(cli);
  const child = spawn(process.execPath, [...launch.nodeOptions, ...(options.nodeArgs ?? []), cli, 'serve'], {
    env: { ...launch.env, ...options.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const output = options.onOutput ?? (() => {});
  child.stdout!.on('data', output);
  child.stderr!.on('data', output);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      done({ code, signal });
    }),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    pid: child.pid!,
    exited,
    alive,
    async kill() {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
    async stop(timeoutMs = 10_000) {
      if (alive()) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Waits until the server's /ready answers 200; the milliseconds it took. Fails at once when the
 * process exits, and after timeoutMs; lastWords() (the end of its output) goes into the error.
 */
export async function waitReady(
  server: Pick<ServerProcess, 'url' | 'alive' | 'exited'>,
  timeoutMs: number,
  lastWords: () => string,
): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (!server.alive()) {
      const { code, signal } = await server.exited;
      throw new Error(`server exited (${code ?? signal}) before ready:\n${lastWords()}`);
    }
    try {
      const response = await fetch(`${server.url}/ready`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok) return Date.now() - started;
    } catch {
      // not listening yet, or the database not yet back
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`server not ready after ${timeoutMs} ms:\n${lastWords()}`);
}
