import { spawnServer, waitReady } from '../../kit/server-process.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { printedDemoCredentials } from '../../kit/welcome-text.js';
import { customers } from '../../src/resources/customers.js';
import { generateCustomers } from '../../src/seed/generate.js';
import { onCleanup } from './cleanup.js';
import { tempDir } from './databases.js';
import { Client } from './load.js';
import { memoryOf, resetPeak, serverEnv } from './server.js';
import { mb } from './stats.js';

/**
 * The zero-setup default as a newcomer meets it (issue 20): `node bin/sfa-backoffice.js serve`, what
 * `npm start` runs, on a new embedded DATA_DIR with no DATABASE_URL, so the first start makes the
 * database and the demo tenant. Measured on that process (VmRSS/VmHWM of /proc/<pid>/status): the
 * time from spawn to /ready, the RSS at rest after the first start and after a restart, and the peak
 * during and the RSS after three 10,000-customer batches of the demo tenant, with the credentials the
 * first start printed.
 */

export interface EmbeddedMemory {
  firstReadyMs: number;
  firstRestKb: number;
  restartReadyMs: number;
  restartRestKb: number;
  /** Peak RSS during each of the three batches (VmHWM reset to the RSS before each). */
  batchPeaksKb: number[];
  batchRestKb: number;
  resetWorked: boolean;
}

/** Bars of issue 20, kB. */
export const EMBEDDED_BARS = { restKb: 200 * 1024, batchKb: 350 * 1024, firstReadyMs: 5_000 };

const REST_MS = 3_000;
/** After batches: the embedded default ends its worker threads once idle (src/body-threads/batch-worker-pool.ts). */
const AFTER_BATCHES_MS = 6_000;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

interface Started {
  pid: number;
  url: string;
  readyMs: number;
  stdout(): string;
  stop(): Promise<void>;
}

async function serve(env: NodeJS.ProcessEnv): Promise<Started> {
  let stdout = '';
  const started = performance.now();
  const server = await spawnServer({
    env,
    onOutput: (chunk) => {
      stdout += chunk.toString();
    },
  });
  onCleanup(`stop server pid ${server.pid}`, () => server.stop());
  await waitReady(server, 60_000, () => stdout.slice(-4000));
  return {
    pid: server.pid,
    url: server.url,
    readyMs: performance.now() - started,
    stdout: () => stdout,
    stop: () => server.stop(),
  };
}

export async function measureEmbeddedMemory(): Promise<EmbeddedMemory> {
  const env = { ...serverEnv(), DATA_DIR: tempDir('sfa-bench-embedded-') };
  const first = await serve(env);
  const demo = printedDemoCredentials(first.stdout());
  await sleep(REST_MS);
  const firstRestKb = memoryOf(first.pid).rssKb;
  await first.stop();

  const again = await serve(env);
  await sleep(REST_MS);
  const restartRestKb = memoryOf(again.pid).rssKb;
  const signedIn = await tenantClient(httpTransport(again.url), demo, {
    subscriptionKey: demo.subscriptionKey,
  });
  const headers = { 'content-type': 'application/json', ...signedIn.headers };
  const http = new Client(again.url, 1);
  let resetWorked = true;
  const batchPeaksKb: number[] = [];
  for (let batch = 0; batch < 3; batch++) {
    resetWorked &&= resetPeak(again.pid);
    const body = new TextEncoder().encode(
      JSON.stringify(generateCustomers({ from: batch * 10_000, count: 10_000, seed: 7 })),
    );
    const answer = await http.request('POST', customers.path, headers, body);
    if (answer.status !== 201) throw new Error(`customers batch: HTTP ${answer.status} ${answer.body}`);
    batchPeaksKb.push(memoryOf(again.pid).peakKb);
  }
  http.close();
  await sleep(AFTER_BATCHES_MS);
  const batchRestKb = memoryOf(again.pid).rssKb;
  await again.stop();
  return {
    firstReadyMs: first.readyMs,
    firstRestKb,
    restartReadyMs: again.readyMs,
    restartRestKb,
    batchPeaksKb,
    batchRestKb,
    resetWorked,
  };
}

/** Lines of the summary table: workload, figure, bar, verdict. */
export function embeddedMemoryLines(m: EmbeddedMemory): string[][] {
  const within = (value: number, bar: number) => (value <= bar ? 'within' : 'OVER');
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [
    [
      'embedded default: first start to /ready (initdb template, migrations, demo tenant)',
      seconds(m.firstReadyMs),
      seconds(EMBEDDED_BARS.firstReadyMs),
      within(m.firstReadyMs, EMBEDDED_BARS.firstReadyMs),
    ],
    [
      'embedded default: RSS at rest after the first start',
      mb(m.firstRestKb),
      mb(EMBEDDED_BARS.restKb),
      within(m.firstRestKb, EMBEDDED_BARS.restKb),
    ],
    ['embedded default: restart to /ready', seconds(m.restartReadyMs), '-', '-'],
    [
      'embedded default: RSS at rest after a restart',
      mb(m.restartRestKb),
      mb(EMBEDDED_BARS.restKb),
      within(m.restartRestKb, EMBEDDED_BARS.restKb),
    ],
    ...m.batchPeaksKb.map((peakKb, at) => [
      `embedded default: peak RSS during 10,000-customer batch ${at + 1} of 3${m.resetWorked ? '' : ' (peak since start)'}`,
      mb(peakKb),
      mb(EMBEDDED_BARS.batchKb),
      within(peakKb, EMBEDDED_BARS.batchKb),
    ]),
    [
      `embedded default: RSS at rest ${AFTER_BATCHES_MS / 1000} s after them`,
      mb(m.batchRestKb),
      mb(EMBEDDED_BARS.batchKb),
      within(m.batchRestKb, EMBEDDED_BARS.batchKb),
    ],
  ];
}
