/**
 * Webhook deliveries (issue 23, extensions.md 11), on PostgreSQL, the production build as child
 * processes, receivers on loopback in this process. `npm run bench:webhooks` (`--quick`: smaller).
 *
 * 1. Latency from a batch's 201 to the receiver, 100 endpoints over 10 tenants, each tenant writing one
 *    customer a second (100 deliveries a second); then the same while
 *    another tenant's endpoint times out on every attempt (15 s each).
 * 2. Throughput: a backlog of customers (`from: start`, batch_size 1000) reaching one receiver,
 *    against downloading the same records with GET /v1/changes (limit 1000) from one client.
 * 3. Idle cost: 1,000 endpoints with nothing to send, in statements per second on the database.
 * 4. Two instances through PgBouncer, the one sending SIGKILLed during a stream of changes: every
 *    record arrives, duplicates only as repeats of one webhook-id, and how long the takeover took.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startPgbouncer } from '../kit/pgbouncer.js';
import { CLI, spawnServer, waitReady } from '../kit/server-process.js';
import { cleanupAll, onCleanup } from './lib/cleanup.js';
import { createPgDatabase } from './lib/databases.js';
import { benchMain, describeMachine, envInt } from './lib/options.js';
import { seedWithCli } from './lib/reads.js';
import { serverEnv, startServer } from './lib/server.js';
import { formatTable, ms, percentile, ratio } from './lib/stats.js';
import { type CreatedTenant, createTenant, type ServiceTenant, signIn } from './lib/tenant.js';

const quick = process.argv.includes('--quick');
const BACKLOG = envInt('BENCH_WEBHOOK_BACKLOG', quick ? 20_000 : 100_000, 1_000, 10_000_000);
const ROUNDS = envInt('BENCH_WEBHOOK_ROUNDS', quick ? 10 : 30, 2, 1_000);
const IDLE_ENDPOINTS = envInt('BENCH_WEBHOOK_IDLE', quick ? 320 : 1_000, 16, 10_000);
const IDLE_SECONDS = envInt('BENCH_WEBHOOK_IDLE_SECONDS', quick ? 10 : 30, 5, 600);
/** Between rounds of writes: each of the 10 tenants writes once a second, so 100 deliveries a second. */
const ROUND_SPACING_MS = envInt('BENCH_WEBHOOK_SPACING_MS', 1000, 10, 60_000);
const STREAM = envInt('BENCH_WEBHOOK_STREAM', quick ? 3_000 : 10_000, 1_000, 1_000_000);

/** One arrival at the receiver. */
interface Arrival {
  path: string;
  id: string;
  codes: string[];
  at: number;
}

/** A receiver on loopback: answers 204 (or holds paths in `hang` without answering), keeps every arrival. */
async function startReceiver() {
  const arrivals: Arrival[] = [];
  const hang = new Set<string>();
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      const path = request.url ?? '';
      if (hang.has(path)) {
        held.push(response);
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      arrivals.push({
        path,
        id: String(request.headers['webhook-id']),
        codes: (body.data ?? []).map((record: { code: string }) => record.code),
        at,
      });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  onCleanup('stop the receiver', () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, arrivals, hang };
}

async function call(baseUrl: string, tenant: ServiceTenant, method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...tenant.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

const customer = (code: string) => ({
  code,
  type: 'RETAIL',
  name: `Customer ${code}`,
  contact: 'Maria',
  phone: '3001234567',
  address: 'Cra 1 # 2-3',
  city: 'Bogota',
  quota: '1000000.50',
  term: 30,
  payment_method: 'CR30',
  state: 'Y',
});

async function until(done: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function tenants(env: NodeJS.ProcessEnv, count: number, prefix: string): Promise<CreatedTenant[]> {
  const made: CreatedTenant[] = [];
  // A few at a time: each is a process of the command line.
  for (let at = 0; at < count; at += 4) {
    const batch = Array.from({ length: Math.min(4, count - at) }, () => createTenant(env, CLI, prefix));
    made.push(...(await Promise.all(batch)));
  }
  return made;
}

/** Transactions committed in the database so far: each statement the service runs alone is one. */
async function commits(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      'SELECT pg_stat_force_next_flush(), xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function latencyPhase(
  baseUrl: string,
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  writers: { tenant: ServiceTenant; paths: string[] }[],
  label: string,
  /** A short tag of the phase in the customer codes (a code has at most 18 characters). */
  tag: string,
): Promise<string[]> {
  const samples: number[] = [];
  const pending: { code: string; paths: string[]; t0: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await Promise.all(
      writers.map(async ({ tenant, paths }, index) => {
        const code = `L${tag}-${round}-${index}`;
        await call(baseUrl, tenant, 'POST', '/api/customers/batch-create', [customer(code)]);
        pending.push({ code, paths, t0: performance.now() });
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, ROUND_SPACING_MS));
  }
  const arrivedAt = new Map<string, number>();
  const key = (path: string, code: string) => `${path} ${code}`;
  const expected = pending.reduce((n, p) => n + p.paths.length, 0);
  await until(() => {
    for (const arrival of receiver.arrivals.splice(0)) {
      for (const code of arrival.codes)
        if (!arrivedAt.has(key(arrival.path, code))) arrivedAt.set(key(arrival.path, code), arrival.at);
    }
    return [...arrivedAt.keys()].filter((k) => k.includes(` L${tag}-`)).length >= expected;
  }, `${label}: every delivery`);
  for (const { code, paths, t0 } of pending)
    for (const path of paths) samples.push(arrivedAt.get(key(path, code))! - t0);
  return [
    label,
    String(samples.length),
    `${ms(percentile(samples, 50))} ms`,
    `${ms(percentile(samples, 99))} ms`,
    `${ms(Math.max(...samples))} ms`,
  ];
}

async function main(): Promise<void> {
  console.log(
    `webhooks benchmark ${new Date().toISOString()}${quick ? ' (quick)' : ''}: ${await describeMachine(true)}`,
  );
  const receiver = await startReceiver();
  const url = await createPgDatabase();
  const env = { ...serverEnv(), DATABASE_URL: url, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' };

  // --- 1 and 2 on one server -----------------------------------------------------------------------
  const latencyTenants = await tenants(env, 11, 'bench-hook');
  const [backlogTenant] = await tenants(env, 1, 'bench-backlog');
  console.log(`  seeding ${BACKLOG} customers`);
  await seedWithCli(env, backlogTenant!.tenant, { customers: BACKLOG, deliveries: 0, itemsPerDelivery: 0 });
  const server = await startServer(env);
  // One at a time: the service refuses token requests past its hashing bound (a burst gets 503).
  const signed: ServiceTenant[] = [];
  for (const created of latencyTenants) signed.push(await signIn(server.baseUrl, created));
  const slow = signed.pop()!;
  const writers: { tenant: ServiceTenant; paths: string[] }[] = [];
  for (const [t, tenant] of signed.entries()) {
    const paths: string[] = [];
    for (let e = 0; e < 10; e++) {
      const path = `/t${t}/e${e}`;
      await call(server.baseUrl, tenant, 'POST', '/v1/webhooks', {
        url: `${receiver.base}${path}`,
        resources: ['customers'],
      });
      paths.push(path);
    }
    writers.push({ tenant, paths });
  }
  const latency = [await latencyPhase(server.baseUrl, receiver, writers, '100 endpoints, 10 tenants', 'a')];
  receiver.hang.add('/slow');
  await call(server.baseUrl, slow, 'POST', '/v1/webhooks', {
    url: `${receiver.base}/slow`,
    resources: ['customers'],
  });
  latency.push(
    await latencyPhase(
      server.baseUrl,
      receiver,
      [...writers, { tenant: slow, paths: [] }],
      'the same, another tenant timing out',
      'b',
    ),
  );
  console.log(
    `\n${formatTable(['latency, 201 to receiver (postgres)', 'deliveries', 'p50', 'p99', 'max'], latency, 1)}`,
  );

  const backlog = await signIn(server.baseUrl, backlogTenant!);
  let downloaded = 0;
  const downloadStarted = performance.now();
  for (let after: string | undefined; ; ) {
    const page = await call(
      server.baseUrl,
      backlog,
      'GET',
      `/v1/changes?resource=customers&limit=1000${after ? `&after=${after}` : ''}`,
    );
    downloaded += page.data.length;
    after = page.next;
    if (!page.hasMore) break;
  }
  const downloadMs = performance.now() - downloadStarted;
  const hookStarted = performance.now();
  await call(server.baseUrl, backlog, 'POST', '/v1/webhooks', {
    url: `${receiver.base}/backlog`,
    resources: ['customers'],
    from: 'start',
    batch_size: 1000,
  });
  const received = new Set<string>();
  await until(
    () => {
      for (const arrival of receiver.arrivals.splice(0)) {
        if (arrival.path === '/backlog') for (const code of arrival.codes) received.add(code);
      }
      return received.size >= BACKLOG;
    },
    'the backlog',
    600_000,
  );
  const hookMs = performance.now() - hookStarted;
  if (downloaded !== BACKLOG) throw new Error(`downloaded ${downloaded}, expected ${BACKLOG}`);
  const perSecond = (rows: number, elapsed: number) => Math.round((rows / elapsed) * 1000);
  console.log(
    `\n${formatTable(
      [`throughput, ${BACKLOG} customers (postgres)`, 'seconds', 'records/s', 'ratio'],
      [
        [
          'GET /v1/changes, limit 1000, one client',
          ms(downloadMs / 1000),
          String(perSecond(BACKLOG, downloadMs)),
          '',
        ],
        [
          'webhook, from start, batch_size 1000',
          ms(hookMs / 1000),
          String(perSecond(BACKLOG, hookMs)),
          `${ratio(downloadMs / hookMs)} of the download's rate (bar 0.5x)`,
        ],
      ],
      1,
    )}`,
  );
  await server.stop();

  // --- 3: idle cost ---------------------------------------------------------------------------------
  const idleEnv = { ...env, DATABASE_URL: await createPgDatabase() };
  const idleTenants = await tenants(idleEnv, Math.ceil(IDLE_ENDPOINTS / 16), 'bench-idle');
  const idleServer = await startServer(idleEnv);
  let made = 0;
  for (const created of idleTenants) {
    const tenant = await signIn(idleServer.baseUrl, created);
    for (let e = 0; e < 16 && made < IDLE_ENDPOINTS; e++, made++) {
      await call(idleServer.baseUrl, tenant, 'POST', '/v1/webhooks', {
        url: `${receiver.base}/idle`,
        resources: ['customers', 'deliveries'],
      });
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const before = await commits(idleEnv.DATABASE_URL);
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  // The two reads of the counter are statements too (one each, on their own connection).
  const statements = (await commits(idleEnv.DATABASE_URL)) - before - 1;
  console.log(
    `\nidle: ${made} endpoints (${made * 2} streams) with nothing to send, one instance: ${(statements / IDLE_SECONDS).toFixed(1)} statements/s (bar 20)`,
  );
  await idleServer.stop();

  // --- 4: two instances through PgBouncer, the sender killed ------------------------------------------
  const killUrl = await createPgDatabase();
  const bouncer = await startPgbouncer(killUrl);
  onCleanup('stop PgBouncer', () => bouncer.stop());
  const pooledEnv = { ...env, DATABASE_URL: bouncer.url(killUrl) };
  const [streamTenant] = await tenants({ ...env, DATABASE_URL: killUrl }, 1, 'bench-kill');
  const instances = await Promise.all(
    [0, 1].map(async () => {
      const child = await spawnServer({ env: { ...pooledEnv, LOG_LEVEL: 'warn' } });
      onCleanup(`stop server pid ${child.pid}`, () => child.stop());
      await waitReady(child, 60_000, () => '');
      return child;
    }),
  );
  // A token of one instance is good on the other (same database).
  const writer = await signIn(instances[0]!.url, streamTenant!);
  await call(instances[0]!.url, writer, 'POST', '/v1/webhooks', {
    url: `${receiver.base}/stream`,
    resources: ['customers'],
    batch_size: 100,
  });
  const streamArrivals: Arrival[] = [];
  const collect = () => {
    for (const arrival of receiver.arrivals.splice(0))
      if (arrival.path === '/stream') streamArrivals.push(arrival);
  };
  const raw = new pg.Client({ connectionString: killUrl });
  await raw.connect();
  onCleanup('close the raw client', () => raw.end());
  let killedAt = 0;
  let killed = -1;
  for (let batch = 0; batch < STREAM / 1000; batch++) {
    const codes = Array.from({ length: 1000 }, (_, n) => customer(`S${batch}-${n}`));
    // Written through the instance that is not killed (the second, unless the first was).
    const through = instances[killed === 1 ? 0 : 1]!;
    await call(
      through.url,
      await signIn(through.url, streamTenant!),
      'POST',
      '/api/customers/batch-create',
      codes,
    );
    if (batch === 1) {
      // Kill the instance that sends now (the pid is in the holder's name: host:pid:random).
      await until(() => {
        collect();
        return streamArrivals.length > 0;
      }, 'the first deliveries');
      // A stream caught up is let go between deliveries: wait for a moment when one instance holds it.
      for (const deadline = Date.now() + 30_000; killed < 0 && Date.now() < deadline; ) {
        const { rows } = await raw.query<{ holder: string | null }>(
          'SELECT holder FROM webhook_streams WHERE held_until > now()',
        );
        const pid = Number(rows[0]?.holder?.split(':')[1]);
        killed = instances.findIndex((instance) => instance.pid === pid);
      }
      if (killed < 0) throw new Error('no instance held the stream while the changes streamed');
      await instances[killed]!.kill();
      killedAt = performance.now();
    }
  }
  await until(
    () => {
      collect();
      return new Set(streamArrivals.flatMap((a) => a.codes)).size >= STREAM;
    },
    'every streamed record',
    180_000,
  );
  const afterKill = streamArrivals.find((a) => a.at > killedAt);
  const idsOf = new Map<string, Set<string>>();
  for (const arrival of streamArrivals) {
    for (const code of arrival.codes) {
      if (!idsOf.has(code)) idsOf.set(code, new Set());
      idsOf.get(code)!.add(arrival.id);
    }
  }
  const repeatedUnderNewId = [...idsOf.values()].filter((ids) => ids.size > 1).length;
  const repeats = streamArrivals.length - new Set(streamArrivals.map((a) => a.id)).size;
  console.log(
    `\n${formatTable(
      ['two instances through PgBouncer, the sender SIGKILLed', 'value'],
      [
        ['records streamed / distinct received', `${STREAM} / ${idsOf.size}`],
        ['deliveries / repeats of a webhook-id', `${streamArrivals.length} / ${repeats}`],
        ['records received under two webhook-ids (bar 0)', String(repeatedUnderNewId)],
        [
          'takeover: kill to the next delivery (bar 10 s, extensions 11)',
          afterKill ? `${ms((afterKill.at - killedAt) / 1000)} s` : 'none',
        ],
      ],
      1,
    )}`,
  );
  await cleanupAll();
}

await benchMain(main);
