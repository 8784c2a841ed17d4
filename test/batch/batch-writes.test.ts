import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { statusAndBody } from '../helpers/answer.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

for (const backend of backends()) {
  describe(`batch writes on ${backend.name}`, () => {
    test('insert-if-absent: new rows created, existing keys ignored and left unchanged', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1', 'P2']);
      const first = await tenant.post('/api/stocks/batch-create', [
        { product_code: 'P1', location: 'W1', quantity: 5 },
        { product_code: 'P2', location: 'W1', quantity: '7.25', factor_description: 'UND' },
      ]);
      assert.deepEqual(statusAndBody(first), {
        status: 201,
        body: { statusCode: 201, message: 'Stocks created successfully', created: 2, updated: 0, ignored: 0 },
      });
      const second = await tenant.post('/api/stocks/batch-create', [
        { product_code: 'P1', location: 'W1', quantity: 99 },
        { product_code: 'P1', location: 'W2' },
      ]);
      assert.deepEqual(second.body, {
        statusCode: 201,
        message: 'Stocks created successfully',
        created: 1,
        updated: 0,
        ignored: 1,
      });
      const rows = await db.query(
        `SELECT product_code, location, quantity::text, factor_description, available
         FROM stocks WHERE tenant_id = $1 ORDER BY product_code, location`,
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(rows, [
        { product_code: 'P1', location: 'W1', quantity: '5.00', factor_description: null, available: 'Y' },
        { product_code: 'P1', location: 'W2', quantity: null, factor_description: null, available: 'Y' },
        { product_code: 'P2', location: 'W1', quantity: '7.25', factor_description: 'UND', available: 'Y' },
      ]);
    });

    test('upsert: prices inserted, then updated by key; unchanged values still count as updated', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const first = await tenant.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L1', price: 10, maximum_discount: '5.5' },
        { product_code: 'P1', price_list: 'L2', price: 20 },
      ]);
      assert.equal(first.status, 201);
      assert.deepEqual([first.body.created, first.body.updated, first.body.ignored], [2, 0, 0]);
      const second = await tenant.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L1', price: '11.10' },
        { product_code: 'P1', price_list: 'L2', price: 20 },
        { product_code: 'P1', price_list: 'L3', price: 30 },
      ]);
      assert.deepEqual(second.body, {
        statusCode: 201,
        message: 'Prices created successfully',
        created: 1,
        updated: 2,
        ignored: 0,
      });
      const rows = await db.query(
        `SELECT price_list, price::text, maximum_discount::text, updated_at IS NOT NULL AS updated
         FROM prices WHERE tenant_id = $1 ORDER BY price_list`,
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(rows, [
        // The whole record is replaced: an absent optional field becomes null.
        { price_list: 'L1', price: '11.10', maximum_discount: null, updated: true },
        { price_list: 'L2', price: '20.00', maximum_discount: null, updated: false },
        { price_list: 'L3', price: '30.00', maximum_discount: null, updated: false },
      ]);
    });

    test('a repeated key inside one batch: first wins when inserting, last wins when upserting', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const stocks = await tenant.post('/api/stocks/batch-create', [
        { product_code: 'P1', location: 'W1', quantity: 1 },
        { product_code: 'P1', location: 'W1', quantity: 2 },
        { product_code: 'P1', location: 'w1', quantity: 3 },
      ]);
      assert.deepEqual([stocks.body.created, stocks.body.updated, stocks.body.ignored], [2, 0, 1]);
      const prices = await tenant.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L1', price: 1 },
        { product_code: 'P1', price_list: 'L1', price: 2 },
        { product_code: 'P1', price_list: 'L1', price: 3 },
      ]);
      assert.deepEqual([prices.body.created, prices.body.updated, prices.body.ignored], [1, 0, 2]);
      const factors = await tenant.post('/api/factors/batch-create', [
        { product_code: 'P1', unit: '1.5', description: 'first' },
        { product_code: 'P1', unit: 1.5, description: 'same unit' },
        { product_code: 'P1', unit: '001.50', description: 'again' },
      ]);
      assert.deepEqual([factors.body.created, factors.body.ignored], [1, 2]);
      const stock = await db.query(
        'SELECT location, quantity::text FROM stocks WHERE tenant_id = $1 ORDER BY location COLLATE "C"',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(stock, [
        { location: 'W1', quantity: '1.00' },
        { location: 'w1', quantity: '3.00' },
      ]);
      const price = await db.query('SELECT price::text FROM prices WHERE tenant_id = $1', [
        tenant.tenant.tenantId,
      ]);
      assert.deepEqual(price, [{ price: '3.00' }]);
      const factor = await db.query('SELECT description FROM factors WHERE tenant_id = $1', [
        tenant.tenant.tenantId,
      ]);
      assert.deepEqual(factor, [{ description: 'first' }]);
    });

    test('a batch with one invalid item writes nothing', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const items = Array.from({ length: 50 }, (_, n) => ({
        code: `U${n}`,
        name: 'n',
        type: 'VENDEDOR',
        phone: '1',
        address: 'a',
      }));
      items.push({ code: 'BAD', name: 'n', type: 'VENDEDOR', phone: '1', address: '' });
      const response = await tenant.post('/api/users/batch-create', items);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, {
        statusCode: 400,
        errors: [{ index: 50, errors: [{ field: 'address', message: 'Field is required' }] }],
      });
      const [count] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM users WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      assert.equal(count!.n, 0);
    });

    test("an unknown product is an invalid item, reported with the item's other problems", async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const response = await tenant.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L1', price: 1 },
        { product_code: 'NOPE', price_list: 'L1', price: 'x' },
        { product_code: 'p1', price_list: 'L1', price: 1 },
      ]);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body.errors, [
        {
          index: 1,
          errors: [
            { field: 'price', message: 'Field must be a valid decimal (e.g., 1.5, 10.25)' },
            { field: 'product_code', message: 'Product does not exist in the product master' },
          ],
        },
        {
          index: 2,
          errors: [{ field: 'product_code', message: 'Product does not exist in the product master' }],
        },
      ]);
      const [count] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM prices WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      assert.equal(count!.n, 0);
    });

    test('a batch whose only problem is unknown products: 400 naming each, nothing written', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      for (const path of [
        '/api/stocks/batch-create',
        '/api/factors/batch-create',
        '/api/prices/batch-create',
      ]) {
        const item =
          path === '/api/stocks/batch-create'
            ? (code: string) => ({ product_code: code, location: 'W1' })
            : path === '/api/factors/batch-create'
              ? (code: string) => ({ product_code: code, unit: 1, description: 'UND' })
              : (code: string) => ({ product_code: code, price_list: 'L1', price: 1 });
        const response = await tenant.post(path, [item('P1'), item('GONE'), item('P1x'), item('GONE')]);
        assert.equal(response.status, 400, path);
        const unknown = { field: 'product_code', message: 'Product does not exist in the product master' };
        assert.deepEqual(
          response.body.errors,
          [1, 2, 3].map((index) => ({ index, errors: [unknown] })),
          path,
        );
      }
      const [counts] = await db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM stocks WHERE tenant_id = $1) + (SELECT count(*) FROM factors WHERE tenant_id = $1)
              + (SELECT count(*) FROM prices WHERE tenant_id = $1) AS n`,
        [tenant.tenant.tenantId],
      );
      assert.equal(Number(counts!.n), 0);
    });

    test('no digit lost: Decimal(18,2) extremes as JSON numbers and as strings', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const body =
        '[{"product_code":"P1","price_list":"A","price":1234567890123456.78,"charges":9999999999999999.99},' +
        '{"product_code":"P1","price_list":"B","price":"1234567890123456.78","base_price":-9999999999999999.99}]';
      const response = await tenant.post('/api/prices/batch-create', body);
      assert.equal(response.status, 201, JSON.stringify(response.body));
      const rows = await db.query(
        'SELECT price_list, price::text, charges::text, base_price::text FROM prices WHERE tenant_id = $1 ORDER BY price_list',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(rows, [
        { price_list: 'A', price: '1234567890123456.78', charges: '9999999999999999.99', base_price: null },
        { price_list: 'B', price: '1234567890123456.78', charges: null, base_price: '-9999999999999999.99' },
      ]);
      const tooPrecise = await tenant.post(
        '/api/prices/batch-create',
        '[{"product_code":"P1","price_list":"C","price":12345678901234567.8,"charges":1.2345678901234567}]',
      );
      assert.deepEqual(tooPrecise.body.errors, [
        {
          index: 0,
          errors: [
            { field: 'price', message: 'Field exceeds maximum of 16 integer digits' },
            { field: 'charges', message: 'Field exceeds maximum of 2 decimal places' },
          ],
        },
      ]);
    });

    test('system attributes: creation date, DISPONIBLE, ESTADO, VENDEDOR_ESTADO, APROBADO statuses', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['P1']);
      const posts = await Promise.all([
        tenant.post('/api/payment-methods/batch-create', [{ code: 'EF', description: 'Cash', type: 'E' }]),
        tenant.post('/api/factors/batch-create', [{ product_code: 'P1', unit: 12, description: 'BOX' }]),
        tenant.post('/api/users/batch-create', [
          { code: 'V1', name: 'Ana', type: 'VENDEDOR', phone: '1', address: 'x' },
        ]),
        tenant.post('/api/routes/batch-create', [
          { client_code: 'C1', seller_code: 'V1', day: 1, frequency: 1 },
        ]),
      ]);
      assert.deepEqual(
        posts.map((p) => p.status),
        [201, 201, 201, 201],
      );
      const [payment] = await db.query(
        'SELECT invoice_status, quote_status, return_status, created_at IS NOT NULL AS dated FROM payment_methods WHERE tenant_id = $1',
        [tenant.tenant.tenantId],
      );
      assert.deepEqual(payment, {
        invoice_status: 'APROBADO',
        quote_status: 'APROBADO',
        return_status: 'APROBADO',
        dated: true,
      });
      const [factor] = await db.query('SELECT state, unit::text FROM factors WHERE tenant_id = $1', [
        tenant.tenant.tenantId,
      ]);
      assert.deepEqual(factor, { state: 'Y', unit: '12.00' });
      const [user] = await db.query('SELECT state FROM users WHERE tenant_id = $1', [tenant.tenant.tenantId]);
      assert.deepEqual(user, { state: 'Y' });
      const [age] = await db.query<{ seconds: number }>(
        `SELECT abs(extract(epoch FROM (now() AT TIME ZONE 'UTC') - created_at))::int AS seconds FROM routes WHERE tenant_id = $1`,
        [tenant.tenant.tenantId],
      );
      assert.ok(age!.seconds < 60, 'creation date is now, in UTC');
    });

    test("tenants never touch each other's rows, even with the same keys", async () => {
      const db = await backend.db();
      const a = await appForNewTenant(db);
      const b = await appForNewTenant(db);
      await seedProducts(a, ['P1']);
      const unknownToB = await b.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L', price: 1 },
      ]);
      assert.equal(unknownToB.status, 400, "A's product does not exist for B");
      await seedProducts(b, ['P1']);
      await a.post('/api/prices/batch-create', [{ product_code: 'P1', price_list: 'L', price: 1 }]);
      const bFirst = await b.post('/api/prices/batch-create', [
        { product_code: 'P1', price_list: 'L', price: 2 },
      ]);
      assert.equal(bFirst.body.created, 1, 'the same key in another tenant is a new row');
      const rows = await db.query<{ tenant_id: number; price: string }>(
        'SELECT tenant_id, price::text FROM prices WHERE tenant_id = ANY($1::int[]) ORDER BY price',
        [[a.tenant.tenantId, b.tenant.tenantId]],
      );
      assert.deepEqual(rows, [
        { tenant_id: a.tenant.tenantId, price: '1.00' },
        { tenant_id: b.tenant.tenantId, price: '2.00' },
      ]);
    });
  });
}
