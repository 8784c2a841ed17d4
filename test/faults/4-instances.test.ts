import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { httpTransport } from '../../kit/transport.js';
import { leaseSize, RATE_LIMIT_WINDOW_SECONDS } from '../../src/http/rate-limit.js';
import { faultSuite, secretsOf } from './fault-suite.js';
import { errorLines } from './faults-server.js';
import { compareWithModel, runWorkload, seedWorkloadProducts } from './faults-workload.js';

/*
 * Issue 5 item 8: two instances of the built server start at the same moment on one empty PostgreSQL
 * database (both migrate it: the advisory lock lets one apply each migration once), then serve the
 * concurrent workload of item 3 together, with the shared rate limit counting every request on one
 * row per key (in blocks claimed by each instance): the same guarantees as on one instance.
 */

const DURATION_MS = 12_000;
const CLIENTS = 12;
const MIGRATIONS = readdirSync(new URL('../../src/db/migrations/', import.meta.url)).filter((f) =>
  f.endsWith('.sql'),
);

describe('two instances on one PostgreSQL', () => {
  const suite = faultSuite({ migrated: false });

  test('started together on an empty database: each migration applied once, both serve', async () => {
    // A generous limit: every request goes through the shared counter, none is refused.
    const env = { DB_POOL_SIZE: '5', RATE_LIMIT_PER_MINUTE: '1000000' };
    const { database } = suite;
    const [one, two] = await Promise.all([suite.startServer(env), suite.startServer(env)]);
    const applied = await database.db.query<{ name: string; n: number }>(
      'SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name ORDER BY name',
    );
    assert.deepEqual(
      applied.map((r) => r.name),
      [...MIGRATIONS].sort(),
    );
    assert.ok(applied.every((r) => r.n === 1));

    const tenant = await suite.newTenant(one);
    const onTwo = tenant.over(httpTransport(two.url));
    // The rate limit's window on the database clock, as the claims compute it.
    const windowNow = async () => {
      const [row] = await database.db.query<{ n: string }>(
        'SELECT floor(extract(epoch FROM clock_timestamp()) / $1::int)::bigint::text AS n',
        [RATE_LIMIT_WINDOW_SECONDS],
      );
      return row!.n;
    };
    const firstWindow = await windowNow();
    await seedWorkloadProducts(onTwo);
    const result = await runWorkload([tenant, onTwo], {
      clients: CLIENTS,
      durationMs: DURATION_MS,
    });
    const { problems, checked } = await compareWithModel(database.db, tenant.tenant.tenantId, result);
    console.log(
      `# instances: ${result.requests} requests ${JSON.stringify(result.byStatus)}, ${checked} keys checked, ` +
        `${result.acknowledged.size} deliveries acknowledged`,
    );
    assert.deepEqual(result.failures, [], 'every request answered 200/201');
    assert.deepEqual(problems, [], 'the tables equal the model');
    assert.ok(result.requests > 200, `enough requests: ${result.requests}`);
    for (const server of [one, two]) {
      assert.ok(server.alive());
      assert.deepEqual(errorLines(server), [], 'no error and no deadlock in the log');
      for (const secret of secretsOf(tenant))
        assert.ok(!server.logs().includes(secret), 'no secret in the log');
    }
    // The shared counter saw every authenticated request of the key, through both instances
    // (+1: the seeding of products), in blocks: each instance may hold part of its last block unused.
    // A claim in a new window deletes the key's older ones, so if the window turned during the run
    // only its last part is counted.
    const sameWindow = (await windowNow()) === firstWindow;
    const unusedAtMost = 2 * leaseSize(1_000_000);
    const [counted] = await database.db.query<{ hits: number }>(
      'SELECT coalesce(sum(hits), 0)::int AS hits FROM rate_limits WHERE key_id = $1',
      [tenant.tenant.keyId],
    );
    const served = result.requests + 1;
    assert.ok(counted!.hits <= served + unusedAtMost, `counted ${counted!.hits} of ${served} served`);
    assert.ok(
      sameWindow ? counted!.hits >= served : counted!.hits > 0,
      `counted ${counted!.hits} of ${served} served (window turned: ${!sameWindow})`,
    );
  });
});
