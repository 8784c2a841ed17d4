import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WORKER_BODY_BYTES } from '../../src/body-threads/batch-worker-pool.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { countRows } from '../helpers/batch-json.js';

/*
 * extensions.md 9: outcomes=true, dry_run=true and on_invalid=skip on every batch endpoint, on small
 * bodies (checked on the event loop) and large ones (checked in a worker thread, which sends back no
 * rows).
 */

const STOCKS = '/api/stocks/batch-create';
const PRICES = '/api/prices/batch-create';
const FACTORS = '/api/factors/batch-create';
const PAYMENT_METHODS = '/api/payment-methods/batch-create';

/** Pads a body past the worker threshold with spaces (valid JSON whitespace), or leaves it small. */
const sized = (body: unknown[], large: boolean) => {
  const text = JSON.stringify(body);
  return large ? `${text}${' '.repeat(WORKER_BODY_BYTES)}` : text;
};

for (const backend of backends()) {
  for (const large of [false, true]) {
    const where = `${backend.name}, ${large ? 'worker thread' : 'inline'}`;
    describe(`batch options (${where})`, () => {
      test('outcomes=true on an insert-if-absent endpoint: the first occurrence applies', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        await seedProducts(tenant, ['P1']);
        assert.equal((await tenant.post(STOCKS, [{ product_code: 'P1', location: 'OLD' }])).status, 201);
        const body = [
          { product_code: 'P1', location: 'A' },
          { product_code: 'P1', location: 'OLD' },
          { product_code: 'P1', location: 'A', quantity: 5 },
          { location: 'B', product_code: 'P1' },
        ];
        const answer = await tenant.post(`${STOCKS}?outcomes=true`, sized(body, large));
        assert.equal(answer.status, 201, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, {
          statusCode: 201,
          message: 'Stocks created successfully',
          created: 2,
          updated: 0,
          ignored: 2,
          items: [
            { index: 0, key: { product_code: 'P1', location: 'A' }, outcome: 'created' },
            { index: 1, key: { product_code: 'P1', location: 'OLD' }, outcome: 'ignored' },
            { index: 2, key: { product_code: 'P1', location: 'A' }, outcome: 'ignored', duplicateOf: 0 },
            { index: 3, key: { product_code: 'P1', location: 'B' }, outcome: 'created' },
          ],
        });
      });

      test('outcomes=true on an upsert: the last occurrence applies; keys as sent', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        await seedProducts(tenant, ['P1', 'P2']);
        assert.equal(
          (await tenant.post(PRICES, [{ product_code: 'P1', price_list: 'L', price: 1 }])).status,
          201,
        );
        const text = `[{"product_code":"P1","price_list":"L","price":2},{"product_code":"P2","price_list":"L","price":1},{"product_code":"P2","price_list":"L","price":3}]`;
        const answer = await tenant.post(
          `${PRICES}?outcomes=true`,
          large ? `${text}${' '.repeat(WORKER_BODY_BYTES)}` : text,
        );
        assert.equal(answer.status, 201, JSON.stringify(answer.body));
        assert.deepEqual(answer.body.items, [
          { index: 0, key: { product_code: 'P1', price_list: 'L' }, outcome: 'updated' },
          { index: 1, key: { product_code: 'P2', price_list: 'L' }, outcome: 'ignored', duplicateOf: 2 },
          { index: 2, key: { product_code: 'P2', price_list: 'L' }, outcome: 'created' },
        ]);
        assert.deepEqual([answer.body.created, answer.body.updated, answer.body.ignored], [1, 1, 1]);
        // A decimal key is echoed as it was sent, not normalised.
        const factors = `[{"product_code":"P1","unit":1.50,"description":"BOX"},{"product_code":"P1","unit":"1.5","description":"BOX"}]`;
        const f = await tenant.post(
          `${FACTORS}?outcomes=true`,
          large ? `${factors}${' '.repeat(WORKER_BODY_BYTES)}` : factors,
        );
        assert.equal(f.status, 201, JSON.stringify(f.body));
        // A JSON number is echoed as a number, a string as that string: the value sent, not normalised.
        assert.equal(f.body.items[0].key.unit, 1.5);
        assert.equal(f.body.items[1].key.unit, '1.5');
        assert.equal(f.body.items[1].duplicateOf, 0);
      });

      test('dry_run=true: counted exactly, nothing written; invalid input gets the real 400', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        await seedProducts(tenant, ['P1']);
        await tenant.post(STOCKS, [{ product_code: 'P1', location: 'OLD' }]);
        const body = [
          { product_code: 'P1', location: 'OLD' },
          { product_code: 'P1', location: 'NEW' },
          { product_code: 'P1', location: 'NEW' },
        ];
        const dry = await tenant.post(`${STOCKS}?dry_run=true`, sized(body, large));
        assert.equal(dry.status, 200, JSON.stringify(dry.body));
        assert.deepEqual(dry.body, {
          statusCode: 200,
          message: 'Validation passed',
          created: 1,
          updated: 0,
          ignored: 2,
        });
        assert.equal(await countRows(db, 'stocks', tenant.tenant.tenantId), 1);
        const withOutcomes = await tenant.post(`${STOCKS}?dry_run=true&outcomes=true`, sized(body, large));
        assert.deepEqual(
          withOutcomes.body.items.map((i: { outcome: string }) => i.outcome),
          ['ignored', 'created', 'ignored'],
        );
        // Product references are checked too: the same 400 as a real run.
        const unknown = [{ product_code: 'NOPE', location: 'X' }, { location: 'Y' }];
        const dryRefused = await tenant.post(`${STOCKS}?dry_run=true`, sized(unknown, large));
        const realRefused = await tenant.post(STOCKS, sized(unknown, large));
        assert.equal(dryRefused.status, 400);
        assert.deepEqual(dryRefused.body, realRefused.body);
        assert.equal(dryRefused.body.errors[0].errors[0].field, 'product_code');
        // A valid batch whose only fault is an unknown product (the write statement refuses it).
        const onlyUnknown = [{ product_code: 'NOPE', location: 'X' }];
        const dryFk = await tenant.post(`${STOCKS}?dry_run=true`, sized(onlyUnknown, large));
        assert.equal(dryFk.status, 400);
        assert.deepEqual(dryFk.body, (await tenant.post(STOCKS, sized(onlyUnknown, large))).body);
        assert.equal(await countRows(db, 'stocks', tenant.tenant.tenantId), 1);
      });

      test('on_invalid=skip: valid items written, invalid ones (unknown products too) rejected with their errors', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        await seedProducts(tenant, ['P1']);
        const body = [
          { product_code: 'P1', location: 'A' },
          { product_code: 'P1' },
          { product_code: 'NOPE', location: 'B' },
          'not an object',
          { product_code: 'P1', location: 'C', extra: 1 },
          { product_code: 'P1', location: 'A' },
          { product_code: 'P1', location: 'D' },
        ];
        const answer = await tenant.post(`${STOCKS}?on_invalid=skip&outcomes=true`, sized(body, large));
        assert.equal(answer.status, 201, JSON.stringify(answer.body));
        const strict = await tenant.post(`${STOCKS}?dry_run=true`, sized(body, large));
        assert.equal(strict.status, 400);
        assert.deepEqual(answer.body.errors, strict.body.errors, 'the 400 body errors shape');
        assert.deepEqual(answer.body, {
          statusCode: 201,
          message: 'Stocks created successfully',
          created: 2,
          updated: 0,
          ignored: 1,
          rejected: 4,
          errors: strict.body.errors,
          items: [
            { index: 0, key: { product_code: 'P1', location: 'A' }, outcome: 'created' },
            { index: 5, key: { product_code: 'P1', location: 'A' }, outcome: 'ignored', duplicateOf: 0 },
            { index: 6, key: { product_code: 'P1', location: 'D' }, outcome: 'created' },
          ],
        });
        assert.deepEqual(
          answer.body.errors.map((e: { index: number }) => e.index),
          [1, 2, 3, 4],
        );
        assert.equal(await countRows(db, 'stocks', tenant.tenant.tenantId), 2);
      });

      test('on_invalid=skip: every item invalid is the usual 400; array errors always 400', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        const body = [{ product_code: 'NOPE', location: 'A' }, { location: 'B' }];
        const skipped = await tenant.post(`${STOCKS}?on_invalid=skip`, sized(body, large));
        const strict = await tenant.post(STOCKS, sized(body, large));
        assert.equal(skipped.status, 400);
        assert.deepEqual(skipped.body, strict.body);
        const methods = await tenant.post(
          `${PAYMENT_METHODS}?on_invalid=skip`,
          sized([{ code: 'C1' }], large),
        );
        assert.equal(methods.status, 400);
        const notArray = await tenant.post(
          `${PAYMENT_METHODS}?on_invalid=skip`,
          large ? `{}${' '.repeat(WORKER_BODY_BYTES)}` : '{}',
        );
        assert.equal(notArray.body.errors[0].message, 'Request body must be an array');
        const empty = await tenant.post(`${PAYMENT_METHODS}?on_invalid=skip`, sized([], large));
        assert.equal(empty.body.errors[0].message, 'Request body cannot be empty');
        const tooLong = await tenant.post(
          `${PAYMENT_METHODS}?on_invalid=skip`,
          Array.from({ length: 10_001 }, (_, n) => ({ code: `M${n}`, description: 'Cash' })),
        );
        assert.equal(tooLong.status, 400);
        assert.equal(tooLong.body.errors[0].message, 'Array exceeds maximum limit of 10000 items');
        const broken = await tenant.post(
          `${PAYMENT_METHODS}?on_invalid=skip`,
          large ? `[{"code":${' '.repeat(WORKER_BODY_BYTES)}` : '[{"code":',
        );
        assert.equal(broken.status, 400);
        assert.equal(broken.body.errors[0].message, 'Invalid JSON in request body');
        assert.equal(await countRows(db, 'payment_methods', tenant.tenant.tenantId), 0);
      });

      test('on_invalid=skip with dry_run: counts and rejections, nothing written', async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        const body = [{ code: 'C1', description: 'Cash' }, { code: 'C2' }];
        const answer = await tenant.post(
          `${PAYMENT_METHODS}?on_invalid=skip&dry_run=true`,
          sized(body, large),
        );
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.deepEqual([answer.body.created, answer.body.rejected], [1, 1]);
        assert.equal(answer.body.errors[0].index, 1);
        assert.equal(await countRows(db, 'payment_methods', tenant.tenant.tenantId), 0);
      });
    });
  }

  describe(`batch options: unknown values (${backend.name})`, () => {
    test('an unknown value of outcomes, dry_run or on_invalid: 400 naming the parameter, nothing written', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      const body = [{ code: 'C1', description: 'Cash' }];
      for (const [query, field] of [
        ['outcomes=yes', 'outcomes'],
        ['dry_run=1', 'dry_run'],
        ['dry_run=', 'dry_run'],
        ['on_invalid=ignore', 'on_invalid'],
        ['outcomes=true&outcomes=false', 'outcomes'],
      ]) {
        const answer = await tenant.post(`${PAYMENT_METHODS}?${query}`, body);
        assert.equal(answer.status, 400, query);
        assert.equal(answer.body.statusCode, 400);
        assert.equal(answer.body.errors[0].field, field, query);
        assert.equal(typeof answer.body.errors[0].message, 'string');
      }
      assert.equal(await countRows(db, 'payment_methods', tenant.tenant.tenantId), 0);
      // The defaults spelled out are accepted, and other parameters ignored as before.
      const plain = await tenant.post(
        `${PAYMENT_METHODS}?outcomes=false&dry_run=false&on_invalid=reject&x=1`,
        body,
      );
      assert.deepEqual(plain.body, {
        statusCode: 201,
        message: 'Payment methods created successfully',
        created: 1,
        updated: 0,
        ignored: 0,
      });
    });
  });
}
