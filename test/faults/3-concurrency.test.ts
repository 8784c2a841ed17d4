import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { faultSuite, secretsOf } from './fault-suite.js';
import { errorLines } from './faults-server.js';
import { compareWithModel, runWorkload, seedWorkloadProducts } from './faults-workload.js';

/*
 * Issue 5 item 3: many clients upserting overlapping keys in random order, mixed with deliveries,
 * acknowledgements and reads, for a bounded time against the built server on PostgreSQL: zero 5xx,
 * zero deadlock or serialization errors reaching a client or the log, and the final tables equal to
 * a model of what was acknowledged with 201 (see test/faults/faults-workload.ts).
 */

const DURATION_MS = 15_000;
const CLIENTS = 12;

describe('concurrency on one server', () => {
  const suite = faultSuite();

  test(`${CLIENTS} clients for ${DURATION_MS / 1000} s: no 5xx, no deadlock, tables equal the model`, async () => {
    const server = await suite.startServer({ DB_POOL_SIZE: '6' });
    const tenant = await suite.newTenant(server);
    await seedWorkloadProducts(tenant);
    const result = await runWorkload([tenant], { clients: CLIENTS, durationMs: DURATION_MS });
    const { problems, checked } = await compareWithModel(suite.database.db, tenant.tenant.tenantId, result);
    console.log(
      `# concurrency: ${result.requests} requests ${JSON.stringify(result.byStatus)}, ${checked} keys checked, ` +
        `${result.acknowledged.size} deliveries acknowledged`,
    );
    assert.deepEqual(result.failures, [], 'every request answered 200/201');
    assert.deepEqual(problems, [], 'the tables equal the model');
    assert.ok(result.requests > 200, `enough requests: ${result.requests}`);
    assert.ok(server.alive());
    assert.deepEqual(errorLines(server), [], 'no error and no deadlock in the log');
    for (const secret of secretsOf(tenant))
      assert.ok(!server.logs().includes(secret), 'no secret in the log');
    // The list totals kept by triggers agree with the rows after all of it.
    const customers = await tenant.get('/v1/customers?limit=1');
    assert.equal(customers.body.meta.totalItems, result.createdCounts.customers);
    const pending = await tenant.get('/v1/deliveries/pending?limit=1');
    assert.equal(pending.body.meta.totalItems, result.createdCounts.deliveries - result.acknowledged.size);
  });
});
