/**
 * The failover drill (issue 41, docs/reliability.md): a primary and a standby under pg_auto_failover on
 * loopback, two instances of `sfa-backoffice serve` on the multi-host DATABASE_URL, and a mixed load:
 * four clients sending keyed batches (products and customers) that send again with the same key until
 * they get an answer, a webhook endpoint receiving every change of products and customers, a bulk job
 * of prices loaded by `sfa-backoffice upload`, two readers following `GET /v1/changes`, a reader of the
 * lists, and each instance's /ready. Mid-job it SIGKILLs the primary (its keeper and postmaster, kept
 * down), lets the monitor promote the standby, runs on, and checks that nothing acknowledged was lost
 * or written twice and that every answer in between said to come back. Prints a table; exits 1 on any
 * loss or wrong answer.
 *
 * `npm run drill:failover` (synchronous standby, 500,000 prices); `-- --short` (what .ci/run runs:
 * 200,000 prices, a shorter load); `-- --async` (the standby not counted for the commit, and its WAL
 * sender frozen just before the kill, so the last commits are lost for certain).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { onCleanup } from '../bench/lib/cleanup.js';
import { benchMain, describeMachine } from '../bench/lib/options.js';
import { CLI, serverEnv, startServer } from '../bench/lib/server.js';
import { createTenant, signIn } from '../bench/lib/tenant.js';
import { PRODUCT_COUNT, productCode, productItems } from '../bench/lib/workloads.js';
import { cliLaunch } from '../kit/server-process.js';
import { answers, call, wrongAnswer } from './lib/answers.js';
import { autoFailoverInstalled, MONITOR_SETTINGS, startCluster } from './lib/auto-failover.js';
import { resendAcknowledged, runWriters, type WriterResource } from './lib/batch-writers.js';
import { differenceFromFeed, followFeed, readWholeFeed, unchangedRepeats } from './lib/feed.js';
import { watchReady } from './lib/ready-watch.js';
import { until } from './lib/until.js';
import { receivedStream, startReceiver } from './lib/webhook-receiver.js';

const SHORT = process.argv.includes('--short');
const ASYNC = process.argv.includes('--async');
const JOB_ROWS = SHORT ? 200_000 : 500_000;
const BATCH_SIZE = SHORT ? 100 : 200;
/** How long the load runs on once a write is accepted again. */
const AFTER_RETURN_MS = SHORT ? 5_000 : 15_000;
/** The job is killed under once it has written this share of its rows. */
const KILL_AT_SHARE = 0.2;
/** Goals of issue 41, from the kill. */
const WRITES_BACK_GOAL_S = 30;
const WEBHOOKS_BACK_GOAL_S = 45;

const log = (line: string) => console.log(`[drill ${new Date().toISOString().slice(11, 23)}] ${line}`);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function writePricesFile(path: string): Promise<void> {
  const out = createWriteStream(path);
  out.write('product_code,price_list,price,base_price\n');
  for (let n = 0; n < JOB_ROWS; n++) {
    const line = `${productCode(n % PRODUCT_COUNT)},L${Math.floor(n / PRODUCT_COUNT)},${(n % 9973) + 0.25},${(n % 9973) + 1}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
}

interface UploadRun {
  jobId: Promise<string>;
  exited: Promise<{ code: number | null; lines: Record<string, unknown>[] }>;
}

/** `sfa-backoffice upload FILE --resource prices --json` against the first instance. */
function upload(file: string, baseUrl: string, credentials: string, env: NodeJS.ProcessEnv): UploadRun {
  const launch = cliLaunch(CLI);
  const child = spawn(
    process.execPath,
    [
      ...launch.nodeOptions,
      CLI,
      'upload',
      file,
      '--resource',
      'prices',
      '--json',
      '--credentials',
      credentials,
    ],
    { env: { ...env, ...launch.env, SFA_URL: baseUrl }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  onCleanup('stop the upload command', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines: Record<string, unknown>[] = [];
  let resolveId: (id: string) => void;
  const jobId = new Promise<string>((done) => {
    resolveId = done;
  });
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    rest += chunk.toString();
    const parts = rest.split('\n');
    rest = parts.pop()!;
    for (const part of parts.filter(Boolean)) {
      const event = JSON.parse(part) as Record<string, unknown>;
      lines.push(event);
      if (event.event === 'job') resolveId(String(event.id));
      if (event.event === 'retry') log(`upload: ${part}`);
    }
  });
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, lines }));
  return { jobId, exited };
}

async function main(): Promise<void> {
  console.log(`failover drill ${new Date().toISOString()}: ${await describeMachine(false)}`);
  console.log(
    `${ASYNC ? 'asynchronous' : 'synchronous'} standby, ${JOB_ROWS.toLocaleString('en')} prices, monitor ${Object.entries(
      MONITOR_SETTINGS,
    )
      .map(([name, value]) => `${name.replace('pgautofailover.', '')}=${value}`)
      .join(' ')}`,
  );
  if (!autoFailoverInstalled())
    throw new Error('install postgresql-15-auto-failover and pg-auto-failover-cli first');

  const cluster = await startCluster({ dbname: 'sfa', synchronous: !ASYNC, log });
  onCleanup('stop the cluster', () => cluster.stop());
  log(`DATABASE_URL=${cluster.databaseUrl}`);

  const dir = mkdtempSync(join(tmpdir(), 'sfa-drill-files-'));
  onCleanup('remove the drill files', () => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...serverEnv(),
    DATABASE_URL: cluster.databaseUrl,
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
    // Each answer to come back is a warn line: hundreds in a failover. Errors (what would be a bug) show.
    LOG_LEVEL: 'error',
  };
  const created = await createTenant(env, CLI, 'drill');
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify(created));
  const servers = [await startServer(env), await startServer(env)];
  const instances = servers.map((server) => server.baseUrl);
  const { headers } = await signIn(instances[0]!, created);
  log(`instances ${instances.join(' ')}`);

  const seeded = await call(
    instances[0]!,
    'batch',
    'POST',
    '/api/products/batch-create',
    headers,
    productItems(),
  );
  if (seeded.status !== 201)
    throw new Error(`seeding products: ${seeded.status} ${JSON.stringify(seeded.body)}`);
  const receiver = await startReceiver();
  onCleanup('close the receiver', () => receiver.close());
  const webhookResources = ['products', 'customers'];
  const endpoint = await call(instances[0]!, 'other', 'POST', '/v1/webhooks', headers, {
    url: receiver.url,
    resources: webhookResources,
    batch_size: 500,
  });
  if (endpoint.status !== 201)
    throw new Error(`creating the endpoint: ${endpoint.status} ${JSON.stringify(endpoint.body)}`);
  const { id: webhookId, positions } = endpoint.body as { id: string; positions: Record<string, string> };

  const pricesFile = join(dir, 'prices.csv');
  await writePricesFile(pricesFile);

  // The load.
  let writing = true;
  let reading = true;
  const ready = servers.map((server) => watchReady(server.baseUrl));
  const writers = runWriters({
    instances,
    headers,
    batchSize: BATCH_SIZE,
    clients: [
      { resource: 'products' as WriterResource, prefix: 'W1-' },
      { resource: 'products' as WriterResource, prefix: 'W2-' },
      { resource: 'customers' as WriterResource, prefix: 'W3-' },
      { resource: 'customers' as WriterResource, prefix: 'W4-' },
    ],
    stopped: () => !writing,
  });
  const feedReaders = ['customers', 'prices'].map((resource) =>
    followFeed(instances, headers, resource, () => !reading),
  );
  const listReads = (async () => {
    for (let turn = 0; reading; turn++) {
      const path = turn % 2 === 0 ? '/v1/customers?limit=50' : '/v1/deliveries/pending?limit=50';
      await call(instances[turn % 2]!, 'other', 'GET', path, headers);
      await sleep(100);
    }
  })();
  const job = upload(pricesFile, instances[0]!, credentials, env);
  const jobId = await job.jobId;
  log(`job ${jobId}: waiting until ${KILL_AT_SHARE * 100} % of its rows are written`);
  await until(
    'the job writing',
    async () => {
      const answer = await call(instances[1]!, 'other', 'GET', `/v1/jobs/${jobId}`, headers);
      const state = answer.body as { state: string; rows: { created: number } };
      if (['succeeded', 'failed', 'aborted'].includes(state.state)) {
        throw new Error(`the job ended (${state.state}) before the kill: the drill needs a bigger file`);
      }
      return state.rows?.created >= JOB_ROWS * KILL_AT_SHARE ? true : undefined;
    },
    300_000,
  );

  // The kill.
  const before = await cluster.primary();
  if (!before) throw new Error('no primary before the kill');
  if (ASYNC) log(`WAL senders of ${before.name} frozen: ${await cluster.freezeReplication(before.name)}`);
  if (ASYNC) await sleep(1_000);
  const killAt = Date.now();
  await cluster.killNode(before.name);
  log(`SIGKILL ${before.name} (keeper and postmaster)`);
  const promoted = await until(
    'a standby promoted',
    async () => {
      const now = await cluster.primary().catch(() => undefined);
      return now && now.name !== before.name ? now : undefined;
    },
    180_000,
  );
  const promotedAt = Date.now();
  log(`${promoted.name} is ${promoted.reported} after ${seconds(promotedAt - killAt)}`);
  const writesBackAt = await until(
    'a write accepted again',
    // The log is in the order answers came: the first 201 to a batch sent after the kill.
    async () => answers.find((a) => a.family === 'batch' && a.status === 201 && a.sentAt > killAt)?.at,
    120_000,
  );
  log(`first write accepted ${seconds(writesBackAt - killAt)} after the kill`);
  await sleep(AFTER_RETURN_MS);
  writing = false;
  const written = await writers;
  log(`writers stopped: ${written.acknowledged.length} batches acknowledged`);
  const uploaded = await Promise.race([
    job.exited,
    sleep(600_000).then(() => {
      throw new Error('the upload command did not end within 10 minutes');
    }),
  ]);
  log(`upload ended with status ${uploaded.code}`);

  // The acknowledged rows the new primary holds; then every acknowledged batch sent once more with its
  // key, as a client that never heard its answer would, and the rows counted again.
  const problems: string[] = [];
  const rows: [string, string][] = [];
  const primaryUrl = `postgres://postgres@127.0.0.1:${promoted.port}/sfa`;
  const db = new pg.Client({ connectionString: primaryUrl });
  await db.connect();
  onCleanup('close the check connection', () => db.end());
  const tenantId = (await db.query('SELECT id FROM tenants WHERE name = $1', [created.tenant])).rows[0]
    .id as number;

  const rowsByCode = async (resource: WriterResource) =>
    new Map<string, number>(
      (
        await db.query(
          `SELECT code, count(*)::int AS n FROM ${resource} WHERE tenant_id = $1 AND code LIKE 'W_-%' GROUP BY code`,
          [tenantId],
        )
      ).rows.map((row) => [row.code as string, row.n as number]),
    );
  const heldBefore = { products: await rowsByCode('products'), customers: await rowsByCode('customers') };
  const resent = await resendAcknowledged(instances, headers, written.acknowledged);
  log(
    `resent ${written.acknowledged.length} acknowledged batches: ${resent.replayed} replayed, ${resent.writtenAgain} written again`,
  );
  reading = false;
  const read = await Promise.all(feedReaders);
  await listReads;
  const readyEnd = await Promise.all(ready.map((watch) => watch.stop()));

  // What the endpoint must have received: the feed after its first positions, once delivered.
  const feeds = new Map<string, Record<string, unknown>[]>();
  for (const resource of webhookResources) {
    feeds.set(resource, await readWholeFeed(instances[0]!, headers, resource, positions[resource]));
  }
  const deliveredAll = () =>
    webhookResources.every(
      (resource) =>
        differenceFromFeed(
          resource,
          receivedStream(receiver.deliveries, resource).records,
          feeds.get(resource)!,
        ) === null,
    );
  // Caught up, or disabled: an endpoint whose delivered positions the database lost says so.
  const endpointState = async () =>
    (await call(instances[0]!, 'other', 'GET', `/v1/webhooks/${webhookId}`, headers)).body as {
      status: string;
      disabled_reason: string | null;
    };
  await until(
    'the webhook endpoint caught up',
    async () => (deliveredAll() || (await endpointState()).status === 'disabled' ? true : undefined),
    180_000,
  ).catch((error: Error) => log(error.message));
  const endpointNow = await endpointState();

  // Batches.
  for (const resource of ['products', 'customers'] as const) {
    const acknowledged = written.acknowledged.filter((batch) => batch.resource === resource);
    const refused = written.refused.filter((batch) => batch.resource === resource);
    const counted = await rowsByCode(resource);
    const ackedCodes = acknowledged.flatMap((batch) => batch.codes);
    const lostWithPrimary = ackedCodes.filter((code) => heldBefore[resource].get(code) !== 1);
    const notOnce = ackedCodes.filter((code) => counted.get(code) !== 1);
    const reportedCreated = acknowledged.reduce((sum, batch) => sum + batch.counts.created, 0);
    const refusedWritten = refused.flatMap((batch) => batch.codes).filter((code) => counted.has(code));
    // Asynchronous replication may lose what it acknowledged; synchronous must not.
    if (!ASYNC && lostWithPrimary.length > 0) {
      problems.push(
        `${resource}: ${lostWithPrimary.length} acknowledged rows lost (${lostWithPrimary.slice(0, 3)})`,
      );
    }
    if (notOnce.length > 0) {
      problems.push(
        `${resource}: ${notOnce.length} acknowledged rows not there exactly once after the batches were sent again (${notOnce.slice(0, 3)})`,
      );
    }
    if (reportedCreated !== ackedCodes.length) {
      problems.push(
        `${resource}: the answers reported ${reportedCreated} created, ${ackedCodes.length} rows acknowledged`,
      );
    }
    if (refusedWritten.length > 0)
      problems.push(`${resource}: ${refusedWritten.length} rows of refused batches written`);
    rows.push([
      `keyed batches of ${resource}`,
      `${acknowledged.length} acknowledged (${ackedCodes.length} rows, answers' created ${reportedCreated}), ` +
        `${refused.length} refused, most attempts ${Math.max(...acknowledged.map((b) => b.attempts))}; ` +
        `lost with the primary: ${lostWithPrimary.length} rows; after sending again: ${notOnce.length} not there exactly once`,
    ]);
  }
  if (!ASYNC && resent.writtenAgain > 0)
    problems.push(`${resent.writtenAgain} acknowledged batches were written again when sent again`);
  for (const other of resent.other.slice(0, 5)) problems.push(`sent again: ${other}`);
  rows.push([
    'acknowledged batches sent again with their keys',
    `${resent.replayed} replayed (Idempotent-Replayed), ${resent.writtenAgain} written again (their key lost with their write), ${resent.other.length} other`,
  ]);

  // Answers.
  const wrong = answers
    .map((answer) => ({ answer, why: wrongAnswer(answer) }))
    .filter((entry) => entry.why !== null);
  for (const { answer, why } of wrong.slice(0, 10)) {
    problems.push(`${answer.method} ${answer.path.split('?')[0]}: ${why} at ${seconds(answer.at - killAt)}`);
  }
  const outage = answers.filter((a) => a.at >= killAt && a.at <= writesBackAt);
  const tally = (list: typeof answers) => {
    const byStatus = new Map<string, number>();
    for (const a of list) byStatus.set(`${a.status}`, (byStatus.get(`${a.status}`) ?? 0) + 1);
    return [...byStatus].map(([status, n]) => `${status}: ${n}`).join(', ');
  };
  rows.push([
    'answers from the kill to the first write accepted',
    `batch ${tally(outage.filter((a) => a.family === 'batch'))}; other ${tally(outage.filter((a) => a.family === 'other'))}`,
  ]);
  // Reads that need no write keep answering (from the standby standing in, decision 0147), once the
  // requests the kill cut are out of the way: those sent a second after it.
  const outageReads = outage.filter(
    (a) =>
      a.method === 'GET' &&
      ['/v1/customers', '/v1/deliveries/pending', '/v1/changes'].some((path) => a.path.startsWith(path)),
  );
  const readsRefused = outageReads.filter((a) => a.sentAt > killAt + 1_000 && a.status !== 200);
  if (readsRefused.length > 0) {
    problems.push(
      `${readsRefused.length} reads (lists, feed) refused while no primary took writes: ${tally(readsRefused)}`,
    );
  }
  rows.push(['reads of the lists and the feed in that time', tally(outageReads) || 'none']);
  rows.push(['answers outside what the service may give', `${wrong.length}`]);

  // Webhooks. An endpoint disabled because the database lost positions it had delivered is the
  // service saying so (asynchronous replication only); what it had received is then not checked.
  const disabledForLostHistory = ASYNC && endpointNow.status === 'disabled';
  for (const resource of webhookResources) {
    const stream = receivedStream(receiver.deliveries, resource);
    const difference = differenceFromFeed(resource, stream.records, feeds.get(resource)!);
    const unchanged = unchangedRepeats(resource, stream.records);
    if (!disabledForLostHistory) {
      if (difference) problems.push(`webhook ${resource}: ${difference}`);
      if (unchanged > 0)
        problems.push(
          `webhook ${resource}: ${unchanged} records arrived again unchanged under a new webhook-id`,
        );
    }
    rows.push([
      `webhook: ${resource}`,
      `${stream.records.length} records of ${feeds.get(resource)!.length} in the feed, ${difference ? 'NOT the feed' : 'every one, in feed order'}; ${stream.repeats} repeated deliveries (same webhook-id), ${unchanged} unchanged records under a new id`,
    ]);
  }
  if (!ASYNC && endpointNow.status !== 'active') problems.push(`webhook endpoint ${endpointNow.status}`);
  rows.push([
    'webhook endpoint',
    `${endpointNow.status}${endpointNow.disabled_reason ? ` (${endpointNow.disabled_reason})` : ''}`,
  ]);

  // The job.
  const summary = uploaded.lines.find((line) => line.event === 'summary') as
    | { state: string; rows: { received: number; created: number; updated: number; invalid: number } }
    | undefined;
  const priceRows = Number(
    (await db.query('SELECT count(*) AS n FROM prices WHERE tenant_id = $1', [tenantId])).rows[0].n,
  );
  const jobOk =
    uploaded.code === 0 &&
    summary?.state === 'succeeded' &&
    summary.rows.created === JOB_ROWS &&
    summary.rows.updated === 0 &&
    priceRows === JOB_ROWS;
  if (!jobOk)
    problems.push(`job: exit ${uploaded.code}, ${JSON.stringify(summary)}, ${priceRows} price rows`);
  rows.push([
    'bulk job of prices',
    `${summary?.state}, created ${summary?.rows.created} updated ${summary?.rows.updated} of ${JOB_ROWS}; ${priceRows} rows in the table`,
  ]);

  // Feed readers.
  for (const reader of read) {
    const feed = await readWholeFeed(instances[0]!, headers, reader.resource);
    const difference = differenceFromFeed(reader.resource, reader.records, feed);
    if (difference) problems.push(`feed reader of ${reader.resource}: ${difference}`);
    rows.push([
      `feed reader: ${reader.resource}`,
      `${reader.pages} pages, ${difference ? 'MISSED records' : 'every record, in order'}${reader.refusals.length ? `, refused ${reader.refusals.length} time(s) with 400 naming after, then read again` : ''}`,
    ]);
  }

  // Readiness.
  for (const [at, watch] of readyEnd.entries()) {
    const last = watch.at(-1);
    if (last?.status !== 200) problems.push(`instance ${at + 1}: /ready ends ${last?.status}`);
    if (!alive(servers[at]!.pid)) problems.push(`instance ${at + 1} exited`);
    rows.push([
      `instance ${at + 1} /ready`,
      watch.map((change) => `${change.status} at ${seconds(change.at - killAt)}`).join(', '),
    ]);
  }

  // Times.
  const firstWebhook = receiver.deliveries.find(
    (delivery) =>
      delivery.receivedAt > killAt &&
      delivery.data.some((record) => Date.parse(`${record.updated_at ?? record.created_at}Z`) > killAt),
  );
  const writesBack = (writesBackAt - killAt) / 1000;
  const webhooksBack = firstWebhook ? (firstWebhook.receivedAt - killAt) / 1000 : Number.NaN;
  rows.push(['kill -> standby promoted (monitor)', seconds(promotedAt - killAt)]);
  rows.push(['kill -> first write accepted', `${writesBack.toFixed(1)} s (goal ${WRITES_BACK_GOAL_S} s)`]);
  // An endpoint disabled for lost history waits for its integrator's replay: no time to take.
  rows.push([
    'kill -> first webhook of a change after the kill',
    disabledForLostHistory
      ? 'none: the endpoint is disabled until its integrator replays'
      : `${webhooksBack.toFixed(1)} s (goal ${WEBHOOKS_BACK_GOAL_S} s)`,
  ]);
  if (!(writesBack <= WRITES_BACK_GOAL_S)) problems.push(`writes came back after ${writesBack.toFixed(1)} s`);
  if (!disabledForLostHistory && !(webhooksBack <= WEBHOOKS_BACK_GOAL_S)) {
    problems.push(`webhooks came back after ${webhooksBack.toFixed(1)} s`);
  }

  console.log('\n| check | result |\n|---|---|');
  for (const [check, result] of rows) console.log(`| ${check} | ${result} |`);
  if (problems.length > 0) {
    console.log(`\n${problems.length} problem(s):`);
    for (const problem of problems) console.log(`- ${problem}`);
    process.exitCode = 1;
  } else {
    console.log(
      '\nNothing acknowledged was lost or written twice; every answer in between said to come back.',
    );
  }
}

await benchMain(main);
