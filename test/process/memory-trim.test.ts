import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { spawnServer, waitReady } from '../../kit/server-process.js';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { printedDemoCredentials } from '../../kit/welcome-text.js';
import { loadMallocTrim, MIN_GROWTH_BYTES, QUIET_MS, QuietTrim } from '../../src/memory-trim.js';
import { generateCustomers } from '../../src/seed/generate.js';

/*
 * The served embedded process runs V8 optimized for size (src/v8-by-engine.ts), and hands freed memory
 * back to the system once it has been quiet a while (src/memory-trim.ts): after its start, and after
 * each spell of requests, never while one is being answered. The figures it brings are in
 * docs/performance.md, "The embedded default's memory and start" (npm run bench:embedded).
 */

describe('QuietTrim', () => {
  function counted(busy = () => false, rss = () => 0) {
    let trims = 0;
    const trim = new QuietTrim(() => void trims++, busy, QUIET_MS, rss);
    return { trim, trims: () => trims };
  }

  test('trims once the process has been quiet for the whole wait, and once only', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { trim, trims } = counted();
    trim.quiet();
    t.mock.timers.tick(QUIET_MS - 1);
    assert.equal(trims(), 0, 'not before the wait');
    t.mock.timers.tick(1);
    assert.equal(trims(), 1);
    t.mock.timers.tick(10 * QUIET_MS);
    assert.equal(trims(), 1, 'nothing new to hand back until requests come');
  });

  test('another quiet spell before the wait ends puts the trim off', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { trim, trims } = counted();
    trim.quiet();
    t.mock.timers.tick(QUIET_MS - 100);
    trim.quiet();
    t.mock.timers.tick(QUIET_MS - 100);
    assert.equal(trims(), 0);
    t.mock.timers.tick(100);
    assert.equal(trims(), 1);
  });

  test('a request in flight when it is due: no trim; the next quiet spell brings it', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let answering = true;
    const { trim, trims } = counted(() => answering);
    trim.quiet();
    t.mock.timers.tick(QUIET_MS);
    assert.equal(trims(), 0);
    answering = false;
    trim.quiet();
    t.mock.timers.tick(QUIET_MS);
    assert.equal(trims(), 1);
  });

  test('after a trim, the next needs the process to have grown by MIN_GROWTH_BYTES since', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let rss = 100 * MIN_GROWTH_BYTES;
    const { trim, trims } = counted(
      () => false,
      () => rss,
    );
    trim.quiet();
    t.mock.timers.tick(QUIET_MS);
    assert.equal(trims(), 1, 'the first trim needs no growth');
    rss += MIN_GROWTH_BYTES - 1;
    trim.quiet();
    t.mock.timers.tick(QUIET_MS);
    assert.equal(trims(), 1, 'a health probe every few seconds trims nothing');
    rss += 1;
    trim.quiet();
    t.mock.timers.tick(QUIET_MS);
    assert.equal(trims(), 2);
  });

  test('stop() cancels a trim that is due, and quiet() arms none after it', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { trim, trims } = counted();
    trim.quiet();
    trim.stop();
    t.mock.timers.tick(2 * QUIET_MS);
    trim.quiet();
    t.mock.timers.tick(2 * QUIET_MS);
    assert.equal(trims(), 0);
  });
});

const glibc = Boolean(
  (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime,
);

test("malloc_trim is found in this machine's C library (glibc on Linux)", {
  skip: glibc ? false : 'not glibc: the trim is not available, and serve runs without it',
}, () => {
  const trim = loadMallocTrim();
  assert.ok(trim, 'malloc_trim loaded through koffi');
  trim();
});

test('the served embedded process favours memory over speed, and trims after its start and after a batch, as its debug log shows', {
  skip: glibc ? false : 'not glibc',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sfa-trim-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let output = '';
  // Resolves a waiter once the log holds a line it is looking for: the test follows the process's
  // own log, never a fixed wait.
  const waiters = new Set<() => void>();
  const server = await spawnServer({
    env: { ...process.env, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'debug', DATABASE_URL: '' },
    onOutput: (chunk) => {
      output += chunk.toString();
      for (const check of waiters) check();
    },
  });
  after(() => server.kill());
  await waitReady(server, 60_000, () => output.slice(-4000));
  type LogLine = {
    time: number;
    msg: string;
    route?: string;
    rssMb: number;
    handedBackMb: number;
    ms: number;
  };
  // Whole JSON lines only: the last piece may be a line still being written.
  const lines = () =>
    output
      .split('\n')
      .slice(0, -1)
      .filter((line) => line.startsWith('{"level"'))
      .map((line) => JSON.parse(line) as LogLine);
  // A line that never comes fails the test with the log's tail, well before the suite's timeout.
  const lineWhere = (found: (line: LogLine) => boolean, what: string) =>
    new Promise<LogLine>((resolve, reject) => {
      const missing = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${what} in the log:\n${output.slice(-2000)}`));
      }, 60_000);
      const check = () => {
        const line = lines().find(found);
        if (!line) return;
        clearTimeout(missing);
        waiters.delete(check);
        resolve(line);
      };
      waiters.add(check);
      check();
    });
  const trimmed = (line: LogLine) => line.msg === 'freed memory handed back';
  // src/v8-by-engine.ts: V8 optimizes for size on the embedded engine (PostgreSQL keeps its defaults).
  assert.match(output, /"v8":"--optimize-for-size".*"embedded engine: V8 favours memory over speed"/);
  const atStart = await lineWhere(trimmed, 'trim after the start');
  assert.ok(atStart.rssMb > 0 && atStart.handedBackMb >= 0 && atStart.ms >= 0, JSON.stringify(atStart));
  // Then a batch of the demo tenant: the trim it brings is the first one the process logged after
  // the batch's "request completed" line, by the process's own clock (a trim armed by an earlier
  // spell, the readiness polls', comes before it or is skipped while the batch is in flight).
  const demo = await tenantClient(httpTransport(server.url), printedDemoCredentials(output));
  const batch = await demo.post(
    '/api/customers/batch-create',
    generateCustomers({ from: 0, count: 3_000, seed: 3 }),
  );
  assert.equal(batch.status, 201, batch.text);
  const answered = await lineWhere(
    (line) => line.msg === 'request completed' && line.route === '/api/customers/batch-create',
    'batch request completed',
  );
  const afterBatch = await lineWhere(
    (line) => trimmed(line) && line.time >= answered.time,
    'trim after the batch',
  );
  assert.ok(afterBatch.handedBackMb > 0, `the batch left memory to hand back: ${JSON.stringify(afterBatch)}`);
});
