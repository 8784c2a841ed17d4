import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { TenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import type { Database } from '../../src/db/database.js';
import { customer, delivery, item } from '../helpers/read-data.js';
import { faultSuite } from './fault-suite.js';
import { sleep, waitForStatement, waitIdle } from './faults-server.js';

/*
 * Issue 5 item 1: a batch is all or nothing, also when its database connection is killed
 * (pg_terminate_backend) or the service process is killed (SIGKILL) in the middle of it. Each round
 * sends a 10,000-item batch to the built server, kills at a random moment while the write statement
 * runs (or while the request is still being read and validated), and then reads the tables with SQL:
 * the batch is there whole or not at all. Upserts overwrite 10,000 existing rows, so a half-applied
 * batch would show as a mix of old and new values.
 */

const N = 10_000;

interface Kind {
  name: string;
  path: string;
  /** The batch in its old (preloaded) or new (the one that is killed) version. */
  batch(version: 'old' | 'new'): unknown[];
  /** Preloads the old version for upserts; nothing for insert-if-absent. */
  preload: boolean;
  /** What the tables of the tenant hold: 'none', 'old', 'new', or a description of a broken state. */
  state(db: Database, tenantId: number): Promise<string>;
}

const KINDS: Kind[] = [
  {
    name: 'prices (upsert over 10,000 rows)',
    path: '/api/prices/batch-create',
    preload: true,
    batch: (version) =>
      Array.from({ length: N }, (_, i) => ({
        product_code: `P${i % 10}`,
        price_list: `L${i}`,
        price: version === 'old' ? 1 : 2,
      })),
    async state(db, tenantId) {
      const rows = await db.query<{ price: string; n: number }>(
        'SELECT price::text, count(*)::int AS n FROM prices WHERE tenant_id = $1 GROUP BY price',
        [tenantId],
      );
      return verdict(
        rows.map((r) => [r.price === '1.00' ? 'old' : r.price === '2.00' ? 'new' : r.price, r.n]),
      );
    },
  },
  {
    name: 'customers (upsert over 10,000 rows)',
    path: '/api/customers/batch-create',
    preload: true,
    batch: (version) => Array.from({ length: N }, (_, i) => customer(`C${i}`, { name: `${version} ${i}` })),
    async state(db, tenantId) {
      const rows = await db.query<{ version: string; n: number }>(
        `SELECT split_part(name, ' ', 1) AS version, count(*)::int AS n FROM customers
         WHERE tenant_id = $1 GROUP BY 1`,
        [tenantId],
      );
      return verdict(rows.map((r) => [r.version, r.n]));
    },
  },
  {
    name: 'deliveries with 2 items each (insert into two tables)',
    path: '/api/deliveries/batch-create',
    preload: false,
    batch: () => Array.from({ length: N }, (_, i) => delivery(`D${i}`, { items: [item(1), item(2)] })),
    async state(db, tenantId) {
      const [row] = await db.query<{ d: number; i: number }>(
        `SELECT (SELECT count(*)::int FROM deliveries WHERE tenant_id = $1) AS d,
                (SELECT count(*)::int FROM delivery_items WHERE tenant_id = $1) AS i`,
        [tenantId],
      );
      if (row!.d === 0 && row!.i === 0) return 'none';
      if (row!.d === N && row!.i === 2 * N) return 'new';
      return `broken: ${row!.d} deliveries, ${row!.i} items`;
    },
  },
];

/** 'none', 'old' or 'new' when the rows are all of one version (and all there), else what is wrong. */
function verdict(groups: [string, number][]): string {
  if (groups.length === 0) return 'none';
  if (groups.length === 1 && groups[0]![1] === N) return groups[0]![0];
  return `broken: ${JSON.stringify(groups)}`;
}

interface Figures {
  rounds: number;
  killedMidStatement: number;
  outcomes: Record<string, number>;
}
const figures: Figures = { rounds: 0, killedMidStatement: 0, outcomes: {} };
after(() => console.log(`# atomicity: ${JSON.stringify(figures)}`));

/** Products P0..P9 that the prices refer to, and the old version of an upsert batch. */
async function prepare(kind: Kind, tenant: TenantClient) {
  const products = await tenant.post(
    '/api/products/batch-create',
    Array.from({ length: 10 }, (_, i) => ({ code: `P${i}`, description: `product ${i}` })),
  );
  assert.equal(products.status, 201, products.text);
  if (kind.preload) {
    const old = await tenant.post(kind.path, kind.batch('old'));
    assert.equal(old.status, 201, old.text);
  }
}

describe('atomicity under killed connections and killed processes', () => {
  const suite = faultSuite();

  test('pg_terminate_backend while a 10,000-item batch runs: all of it or none; the service keeps serving', async () => {
    const { database, admin } = suite;
    const server = await suite.startServer();
    for (let round = 0; round < 9; round++) {
      const kind = KINDS[round % KINDS.length]!;
      const tenant = await suite.newTenant(server);
      await prepare(kind, tenant);
      const before = await kind.state(database.db, tenant.tenant.tenantId);
      const body = JSON.stringify(kind.batch('new'));
      const sent = tenant.post(kind.path, body);
      const pid = await waitForStatement(admin, database.name, 'WITH written', 20_000);
      assert.ok(pid, `${kind.name}: the write statement was seen running`);
      // Somewhere inside the statement: at once, or up to 60 ms into it (the fastest of these
      // statements, 10,000 prices, takes about 100 ms since columns go as array literals).
      await sleep(Math.random() * 60);
      const { rows } = await admin.query<{ killed: boolean }>('SELECT pg_terminate_backend($1) AS killed', [
        pid,
      ]);
      const answer = await sent;
      await waitIdle(admin, database.name, 20_000);
      const state = await kind.state(database.db, tenant.tenant.tenantId);
      figures.rounds++;
      figures.outcomes[`terminate ${answer.status} ${state}`] =
        (figures.outcomes[`terminate ${answer.status} ${state}`] ?? 0) + 1;

      assert.ok(!state.startsWith('broken'), `${kind.name}: ${state}`);
      if (answer.status === 201) {
        assert.equal(state, 'new', `${kind.name}: acknowledged, so all written`);
      } else {
        if (rows[0]!.killed) figures.killedMidStatement++;
        assert.equal(answer.status, 500, answer.text);
        assert.match(answer.body.errors[0].message, /^Error connecting to database: /);
        assert.equal(state, before, `${kind.name}: refused, so nothing written (was ${before}, is ${state})`);
        // The client was told it failed; sending the same batch again is safe and completes it.
        const again = await tenant.post(kind.path, body);
        assert.equal(again.status, 201, again.text);
        assert.equal(await kind.state(database.db, tenant.tenant.tenantId), 'new');
      }
      assert.ok(server.alive(), 'the server process survived');
    }
    assert.ok(
      figures.killedMidStatement >= 3,
      `at least 3 statements were killed mid-way: ${JSON.stringify(figures)}`,
    );
    const ready = await fetch(`${server.url}/ready`);
    assert.equal(ready.status, 200);
  });

  test('SIGKILL of the server while a 10,000-item batch is read or written: all of it or none', async () => {
    const { database, admin } = suite;
    for (let round = 0; round < 6; round++) {
      const kind = KINDS[round % KINDS.length]!;
      const server = await suite.startServer();
      const tenant = await suite.newTenant(server);
      await prepare(kind, tenant);
      const before = await kind.state(database.db, tenant.tenant.tenantId);
      const body = JSON.stringify(kind.batch('new'));
      const sent = tenant.post(kind.path, body);
      if (round % 2 === 0) {
        // While the statement runs.
        const pid = await waitForStatement(admin, database.name, 'WITH written', 20_000);
        assert.ok(pid, 'the write statement was seen running');
        figures.killedMidStatement++;
        await sleep(Math.random() * 200);
      } else {
        // Any moment from the first byte on: reading, parsing, validating, writing.
        await sleep(Math.random() * 150);
      }
      server.child.kill('SIGKILL');
      const answer = await sent;
      await server.exited;
      // PostgreSQL runs a statement whose client died to its end (then commits or rolls back).
      await waitIdle(admin, database.name, 30_000);
      const state = await kind.state(database.db, tenant.tenant.tenantId);
      figures.rounds++;
      figures.outcomes[`sigkill ${answer.status} ${state}`] =
        (figures.outcomes[`sigkill ${answer.status} ${state}`] ?? 0) + 1;
      assert.ok(!state.startsWith('broken'), `${kind.name}: ${state}`);
      assert.ok(state === before || state === 'new', `${kind.name}: ${before} -> ${state}`);
      if (answer.status === 201) assert.equal(state, 'new');

      // A new process serves again, and the batch sent again completes it (retries are safe).
      const next = await suite.startServer();
      const again = await tenant.over(httpTransport(next.url)).post(kind.path, body);
      assert.equal(again.status, 201, again.text);
      assert.equal(await kind.state(database.db, tenant.tenant.tenantId), 'new');
      await next.kill();
    }
  });
});
