import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tenantClient } from '../../kit/tenant-client.js';
import { httpTransport } from '../../kit/transport.js';
import { loadConfig } from '../../src/config.js';
import { PGLITE_STATEMENT_ROWS } from '../../src/db/pglite.js';
import { startServer } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { newDatabaseSettings, servedBackends } from '../helpers/served-settings.js';

/*
 * The database as the process opens it (startServer, what `sfa-backoffice serve` and `npm start`
 * run), not as tests open it directly: a wrapper that lost a member of the database once turned off
 * PGlite's chunked writes and the planner upkeep of every served instance, and no test saw it.
 */

const ROWS = 5_000;

for (const backend of servedBackends) {
  describe(`served database on ${backend}`, () => {
    test('a bulk load through the served API leaves planner statistics for the next read', async () => {
      const server = await startServer(
        loadConfig({
          PORT: '0',
          LOG_LEVEL: 'silent',
          RATE_LIMIT_PER_MINUTE: '0',
          ...(await newDatabaseSettings(backend)),
        }),
      );
      try {
        const tenant = await tenantClient(httpTransport(server.url), await createTenant(server.db, 'served'));
        const products = Array.from({ length: ROWS }, (_, at) => ({ code: `S${at}`, description: 'served' }));
        const upload = await tenant.post('/api/products/batch-create', products);
        assert.equal(upload.status, 201, upload.text);

        // The write told the upkeep, which analysed the table before answering: without it PostgreSQL's
        // reltuples stays -1 until autovacuum comes (a minute or more), PGlite's for ever.
        const [stats] = await server.db.query<{ rows: number }>(
          `SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = 'products'::regclass`,
        );
        assert.ok(stats!.rows >= ROWS * 0.9, `products analysed after the load (reltuples ${stats!.rows})`);

        // PGlite cuts large batches into statements of its size; PostgreSQL takes one statement.
        assert.equal(
          server.db.statementRows,
          backend === 'pglite' ? PGLITE_STATEMENT_ROWS : Number.POSITIVE_INFINITY,
        );
      } finally {
        await server.close();
      }
    });
  });
}
