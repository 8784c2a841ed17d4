/**
 * The console's first load (issue 40): `npm run bench:console`. The served process on the embedded
 * default (a new DATA_DIR, one tenant), Debian's Chromium (playwright-core), each load in a new browser
 * context (no cache): the bytes on the wire and the time from navigation to the sign-in form ready
 * for input (the application's script run and its first page drawn), beside the same built files,
 * compressed copies included, from a bare node:http server (the floor: what serving files costs
 * without the service). Then, signed in, the time from the click to the Overview with its chart
 * drawn (two API requests: /token and /v1/overview). Rounds alternate the two servers.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { CONSOLE_ROOT } from '../src/http/console-routes.js';
import { onCleanup } from './lib/cleanup.js';
import { tempDir } from './lib/databases.js';
import { benchMain, describeMachine, envInt, load1 } from './lib/options.js';
import { CLI, serverEnv, startServer } from './lib/server.js';
import { formatTable, median, ms, percentile, ratio } from './lib/stats.js';
import { createTenant } from './lib/tenant.js';

const ROUNDS = envInt('BENCH_CONSOLE_ROUNDS', 15, 3, 200);
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The floor: dist/console from node:http, the build's compressed copy when the service sent one. */
function floorServer(encoding: string | undefined): Promise<string> {
  const suffix = encoding === 'br' ? '.br' : encoding === 'gzip' ? '.gz' : '';
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0]!;
    const file =
      path.startsWith('/console/assets/') || path === '/console/favicon.svg'
        ? normalize(path.slice('/console/'.length))
        : 'index.html';
    const headers: Record<string, string> = {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    };
    let body: Buffer;
    try {
      body = readFileSync(join(CONSOLE_ROOT, file + suffix));
      if (suffix) headers['content-encoding'] = encoding!;
    } catch {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, headers).end(body);
  });
  onCleanup('stop the floor server', () => new Promise((done) => server.close(() => done())));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

interface FirstLoad {
  ms: number;
  bytes: number;
  requests: number;
  encoding: string | undefined;
}

/** One first load: navigation to the sign-in button shown, every response's bytes on the wire. */
async function firstLoad(page: Page, base: string): Promise<FirstLoad> {
  const sizes: Array<Promise<number>> = [];
  let encoding: string | undefined;
  page.on('requestfinished', (request) => {
    sizes.push(request.sizes().then((size) => size.responseBodySize + size.responseHeadersSize));
    void request.response().then(async (response) => {
      const header = await response?.headerValue('content-encoding');
      if (header && request.url().endsWith('.js')) encoding = header;
    });
  });
  await page.goto(`${base}/console`);
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  const at = await page.evaluate(() => performance.now());
  await page.waitForLoadState('networkidle');
  const bytes = (await Promise.all(sizes)).reduce((total, n) => total + n, 0);
  return { ms: at, bytes, requests: sizes.length, encoding };
}

async function main(): Promise<void> {
  console.log(`console benchmark ${new Date().toISOString()}: ${await describeMachine(false)}`);
  const env = { ...serverEnv(), DATA_DIR: tempDir('sfa-bench-console-') };
  const created = await createTenant(env, CLI);
  const server = await startServer(env);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  onCleanup('close the browser', () => browser.close());

  const service: FirstLoad[] = [];
  const floor: FirstLoad[] = [];
  const signedIn: number[] = [];
  let floorUrl: string | undefined;
  // One uncounted load of each: the first start of a browser process is not the console's.
  for (let round = -1; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ['service', 'floor'] : ['floor', 'service']) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      if (side === 'service') {
        const load = await firstLoad(page, server.baseUrl);
        await page.getByLabel('Subscription key').fill(created.subscriptionKey);
        await page.getByLabel('Client id').fill(created.clientId);
        await page.getByLabel('Client secret').fill(created.clientSecret);
        const clicked = await page.evaluate(() => performance.now());
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.locator('.chart canvas').waitFor();
        const drawn = await page.evaluate(() => performance.now());
        if (round >= 0) {
          service.push(load);
          signedIn.push(drawn - clicked);
        }
        floorUrl ??= await floorServer(load.encoding);
      } else if (floorUrl) {
        const load = await firstLoad(page, floorUrl);
        if (round >= 0) floor.push(load);
      }
      await context.close();
    }
  }

  const times = (loads: FirstLoad[]) => loads.map((load) => load.ms);
  const p50 = (samples: number[]) => median(samples);
  const p90 = (samples: number[]) => percentile(samples, 90);
  const first = service[0]!;
  console.log(
    `\n${ROUNDS} first loads per side, each in a new browser context; ${first.requests} requests, ` +
      `content-encoding ${first.encoding ?? 'none'}; load average ${load1()}`,
  );
  console.log(
    formatTable(
      ['measure', 'service p50 / p90', 'floor p50 / p90', 'p50 ratio'],
      [
        [
          'bytes on the wire (bodies and headers)',
          `${median(service.map((l) => l.bytes))}`,
          `${median(floor.map((l) => l.bytes))}`,
          ratio(median(service.map((l) => l.bytes)) / median(floor.map((l) => l.bytes))),
        ],
        [
          'navigation to the sign-in form ready, ms',
          `${ms(p50(times(service)))} / ${ms(p90(times(service)))}`,
          `${ms(p50(times(floor)))} / ${ms(p90(times(floor)))}`,
          ratio(p50(times(service)) / p50(times(floor))),
        ],
        ['sign-in click to the Overview drawn, ms', `${ms(p50(signedIn))} / ${ms(p90(signedIn))}`, '', ''],
      ],
      1,
    ),
  );
}

await benchMain(main);
