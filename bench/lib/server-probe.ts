import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RawClient } from './databases.js';

/**
 * Where a request's time goes while the server is loaded, seen from outside the server process:
 * - the event loop's delay and utilisation, from `perf_hooks` inside the server (lib/loop-probe.mjs,
 *   preloaded; its figures are reset at each call, so the call at the end of a phase covers the phase);
 * - pool connections in use and clients waiting for one (sampled every SAMPLE_MS during the phase);
 * - CPU seconds of the server process and of the PostgreSQL backends of the benchmark's database
 *   (utime + stime from /proc/<pid>/stat).
 */

const SAMPLE_MS = 100;

/** The preload module that serves the server's event-loop figures (see startServer's nodeArgs). */
export const LOOP_PROBE = fileURLToPath(new URL('./loop-probe.mjs', import.meta.url));
/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat on Linux. */
const CLOCK_TICKS = 100;

export interface ProbeFigures {
  /** Event-loop delay over the phase, ms, and the share of the time the loop was busy. */
  loopP50: number;
  loopP99: number;
  loopMax: number;
  loopUtilization: number;
  /** Pool: mean and peak of connections in use and of clients waiting for one (PostgreSQL only). */
  inUseMean: number;
  waitingMean: number;
  waitingMax: number;
  /** CPU used during the phase, as a share of one core (1.00 = one core busy all the time). */
  serverCpu: number;
  postgresCpu: number | undefined;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

/** utime + stime of a process in seconds; 0 when it is gone. */
function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

export class ServerProbe {
  readonly #metricsUrl: string;
  readonly #loopUrl: string;
  readonly #serverPid: number;
  /** PostgreSQL: a connection to the benchmark's database (to find its backends); PGlite: none. */
  readonly #pg: { client: RawClient; database: string } | undefined;

  constructor(
    urls: { metrics: string; loop: string },
    serverPid: number,
    pg?: { client: RawClient; database: string },
  ) {
    this.#metricsUrl = urls.metrics;
    this.#loopUrl = urls.loop;
    this.#serverPid = serverPid;
    this.#pg = pg;
  }

  async #backendCpu(): Promise<Map<number, number>> {
    const cpu = new Map<number, number>();
    if (!this.#pg) return cpu;
    const rows = await this.#pg.client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [this.#pg.database],
    );
    for (const { pid } of rows) cpu.set(pid, cpuSecondsOf(pid));
    return cpu;
  }

  /** Starts watching; the returned function ends the phase and gives its figures. */
  async start(): Promise<() => Promise<ProbeFigures>> {
    await fetch(this.#loopUrl).then((r) => r.text()); // resets the event-loop figures
    const started = performance.now();
    const serverCpu = cpuSecondsOf(this.#serverPid);
    const backends = await this.#backendCpu();
    const inUse: number[] = [];
    const waiting: number[] = [];
    let sampling = Promise.resolve();
    const timer = setInterval(() => {
      sampling = sampling.then(async () => {
        const values = await scrape(this.#metricsUrl).catch(() => undefined);
        if (!values?.has('sfa_db_pool_waiting_clients')) return;
        inUse.push(values.get('sfa_db_pool_connections')! - values.get('sfa_db_pool_idle_connections')!);
        waiting.push(values.get('sfa_db_pool_waiting_clients')!);
      });
    }, SAMPLE_MS);
    return async () => {
      clearInterval(timer);
      await sampling;
      const seconds = (performance.now() - started) / 1000;
      const loop = (await (await fetch(this.#loopUrl)).json()) as Record<string, number>;
      const after = await this.#backendCpu();
      let postgres = 0;
      // A backend opened during the phase started from 0; one closed during it is not counted.
      for (const [pid, cpu] of after) postgres += cpu - (backends.get(pid) ?? 0);
      const mean = (list: number[]) => (list.length ? list.reduce((a, b) => a + b, 0) / list.length : 0);
      return {
        loopP50: loop.p50!,
        loopP99: loop.p99!,
        loopMax: loop.max!,
        loopUtilization: loop.utilization!,
        inUseMean: mean(inUse),
        waitingMean: mean(waiting),
        waitingMax: waiting.length ? Math.max(...waiting) : 0,
        serverCpu: (cpuSecondsOf(this.#serverPid) - serverCpu) / seconds,
        postgresCpu: this.#pg ? postgres / seconds : undefined,
      };
    };
  }
}
