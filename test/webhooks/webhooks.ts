import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { scratchPostgresDatabase } from '../../kit/scratch-database.js';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { InjectTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import { addressRules, parseNetworks, type Resolve } from '../../src/webhooks/addresses.js';
import type { DeliverySettings } from '../../src/webhooks/delivery-work.js';
import type { Backend } from '../helpers/backends.js';
import { feedCaughtUp } from '../helpers/feed.js';
import { customer } from '../helpers/read-data.js';

const pause = () => new Promise<void>((done) => setTimeout(done, 5));

/**
 * Until the condition holds, doing `step` between looks (by default a 5 ms pause): a positive signal
 * waited for, bounded far beyond a busy machine's delays, so that what never happens fails naming
 * itself instead of a count of tries running out first.
 */
export async function until(holds: () => boolean, what: string, step: () => Promise<unknown> = pause) {
  const deadline = Date.now() + 30_000;
  while (!holds()) {
    assert.ok(Date.now() < deadline, `${what}, within 30 s`);
    await step();
  }
}

/** What a receiver on loopback got, in order. */
export interface Received {
  path: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A webhook receiver on loopback answering with `handle` (after the whole body arrived), closed after
 * the test file; `received` lists what came, in order.
 */
export async function receiver(handle: (request: IncomingMessage, response: ServerResponse) => void = ok) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push({ path: request.url, headers: request.headers, body });
      handle(request, response);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/hooks`), received, server };
}

function ok(_request: IncomingMessage, response: ServerResponse): void {
  response.statusCode = 204;
  response.end();
}

/** Deliveries may reach loopback, as WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 allows them. */
export const loopbackRules = addressRules(parseNetworks('127.0.0.0/8'));

/** A resolver with fixed answers (never the machine's DNS); a name it lacks does not resolve. */
export function fixedResolver(answers: Record<string, string[]>): Resolve {
  return async (hostname) => {
    const found = answers[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

/** Webhook settings of test apps: loopback allowed, a fixed resolver, no jitter, short timeouts. */
export function testWebhookSettings(overrides: Partial<DeliverySettings> = {}): Partial<DeliverySettings> {
  return {
    rules: loopbackRules,
    resolve: fixedResolver({ 'erp.example.com': ['93.184.216.34'] }),
    random: () => 0.5,
    timeoutMs: 5_000,
    ...overrides,
  };
}

/**
 * Backends with a database of this test file alone: a new PGlite, and a scratch database on the
 * TEST_DATABASE_URL server. Deliveries claim every due stream of the database, so suites that run
 * rounds must not share one with other files' streams.
 */
export function privateBackends(): Backend[] {
  const open = (
    name: Backend['name'],
    opener: () => Promise<{ db: Database; drop?: () => Promise<void> }>,
  ) => {
    let opened: Promise<{ db: Database; drop?: () => Promise<void> }> | undefined;
    // Registered here, at the file's level: a hook registered inside a test would run after that test.
    after(async () => {
      if (!opened) return;
      const { db, drop } = await opened;
      await db.close();
      await drop?.();
    });
    const backend: Backend = {
      name,
      async db() {
        opened ??= opener().then(async (found) => {
          await migrate(found.db);
          return found;
        });
        return (await opened).db;
      },
    };
    return backend;
  };
  const list = [open('pglite', async () => ({ db: await openPglite(undefined) }))];
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    list.push(
      open('postgres', async () => {
        const scratch = await scratchPostgresDatabase(url);
        return { db: await openPostgres({ connectionString: scratch.url, poolSize: 4 }), drop: scratch.drop };
      }),
    );
  }
  return list;
}

/** One round of the app's deliveries, and every turn it started run to its end. */
export async function deliver(app: FastifyInstance): Promise<void> {
  await app.webhookDeliveries.round();
  await app.webhookDeliveries.settled();
}

/** Customers written by the tenant, and the feed caught up so that a round finds them. */
export async function loadCustomers(
  db: Database,
  tenant: TenantClient<any, InjectTransport>,
  codes: string[],
): Promise<void> {
  const response = await tenant.post(
    '/api/customers/batch-create',
    codes.map((code) => customer(code)),
  );
  assert.equal(response.status, 201, response.text);
  await feedCaughtUp(db);
}

/** Seconds until the endpoint's latest due stream may be attempted again (0 or less: due now). */
export async function secondsUntilDue(db: Database, endpointId: string): Promise<number> {
  const [row] = await db.query<{ wait: number }>(
    'SELECT extract(epoch FROM max(next_attempt_at) - now())::float8 AS wait FROM webhook_streams WHERE endpoint_id = $1',
    [endpointId],
  );
  return row!.wait;
}

/** Makes the endpoint's streams due now: the backoff's wait, without waiting for it. */
export async function dueNow(db: Database, endpointId: string): Promise<void> {
  await db.query('UPDATE webhook_streams SET next_attempt_at = now() WHERE endpoint_id = $1', [endpointId]);
}

/** The value of one series of the app's metrics, as exposed (a labelled series not counted yet: 0). */
export async function metric(app: FastifyInstance, series: string): Promise<number> {
  const text = await app.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
