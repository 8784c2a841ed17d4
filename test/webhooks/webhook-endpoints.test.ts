import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addressRules } from '../../src/webhooks/addresses.js';
import { inputMessages } from '../../src/webhooks/endpoint-input.js';
import { ownedTenantApp } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { fixedResolver, testWebhookSettings } from './webhooks.js';

/*
 * The webhook endpoints' management API (extensions.md 11): the endpoint's shape, its secret shown
 * once, every field checked and named, the address rules at registration, 16 endpoints a tenant,
 * PATCH, DELETE, rotation, replay's checks, the deliveries log's limit, 404 for another tenant's.
 */

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

const resolve = fixedResolver({
  'erp.example.com': ['93.184.216.34'],
  'inside.example.com': ['10.1.2.3'],
  'mixed.example.com': ['93.184.216.34', '127.0.0.1'],
  'meta.example.com': ['169.254.169.254'],
});

/** Apps whose deliveries reach only public addresses (the default rules) and resolve by the table above. */
async function client(db: Parameters<typeof ownedTenantApp>[0]) {
  const tenant = await ownedTenantApp(db, {
    webhooks: testWebhookSettings({ rules: addressRules(), resolve }),
  });
  return tenant;
}

const valid = { url: 'https://erp.example.com/hooks/sfa', resources: ['customers', 'deliveries'] };

for (const backend of backends()) {
  describe(`webhook endpoints on ${backend.name}`, () => {
    test('POST answers the endpoint with its secret once; GET shows it without', async () => {
      const tenant = await client(await backend.db());
      try {
        const created = await tenant.post('/v1/webhooks', { ...valid, description: 'ERP', batch_size: 50 });
        assert.equal(created.status, 201, created.text);
        const body = created.body;
        assert.deepEqual(Object.keys(body), [
          'id',
          'url',
          'resources',
          'description',
          'batch_size',
          'status',
          'failing_since',
          'disabled_reason',
          'secret',
          'positions',
          'created_at',
        ]);
        assert.match(body.id, /^wh_[0-9a-f]{24}$/);
        assert.match(body.secret, SECRET);
        assert.equal(body.url, valid.url);
        assert.deepEqual(body.resources, valid.resources);
        assert.equal(body.batch_size, 50);
        assert.equal(body.status, 'active');
        assert.equal(body.failing_since, null);
        assert.match(body.created_at, DATE_TIME);
        assert.deepEqual(Object.keys(body.positions), valid.resources);
        // Each position is a cursor of the feed: GET /v1/changes takes it.
        for (const resource of valid.resources) {
          const page = await tenant.get(`/v1/changes?resource=${resource}&after=${body.positions[resource]}`);
          assert.equal(page.status, 200, page.text);
          assert.deepEqual(page.body.data, []);
        }

        const listed = await tenant.get('/v1/webhooks');
        assert.equal(listed.status, 200);
        assert.equal(listed.body.data.length, 1);
        const { secret: _secret, ...shown } = body;
        assert.deepEqual(listed.body.data[0], shown);
        assert.ok(!listed.text.includes(body.secret.slice(6)));
        const one = await tenant.get(`/v1/webhooks/${body.id}`);
        assert.deepEqual(one.body, shown);
        // Defaults: batch_size 100, description null.
        const plain = await tenant.post('/v1/webhooks', { url: valid.url, resources: ['prices'] });
        assert.equal(plain.body.batch_size, 100);
        assert.equal(plain.body.description, null);
        assert.notEqual(plain.body.secret, body.secret);
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('every field is checked and named, in the read side 400 shape', async () => {
      const tenant = await client(await backend.db());
      try {
        const refused = async (body: unknown, fields: (string | null)[]) => {
          const response = await tenant.post('/v1/webhooks', body);
          assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
          assert.equal(response.body.statusCode, 400);
          assert.deepEqual(
            response.body.errors.map((e: { field: string | null }) => e.field),
            fields,
            JSON.stringify(body),
          );
          for (const error of response.body.errors) assert.equal(typeof error.message, 'string');
        };
        await refused({}, ['url', 'resources']);
        await refused([], [null]);
        await refused({ ...valid, url: 'ftp://erp.example.com/x' }, ['url']);
        await refused({ ...valid, url: 'https://user:pw@erp.example.com/x' }, ['url']);
        await refused({ ...valid, url: 'https://erp.example.com/x#part' }, ['url']);
        await refused({ ...valid, url: `https://erp.example.com/${'a'.repeat(2030)}` }, ['url']);
        await refused({ ...valid, url: '/relative' }, ['url']);
        await refused({ ...valid, url: 42 }, ['url']);
        await refused({ ...valid, resources: [] }, ['resources']);
        await refused({ ...valid, resources: ['customers', 'customers'] }, ['resources']);
        await refused({ ...valid, resources: ['orders'] }, ['resources']);
        await refused({ ...valid, from: 'later' }, ['from']);
        await refused({ ...valid, batch_size: 0 }, ['batch_size']);
        await refused({ ...valid, batch_size: 1001 }, ['batch_size']);
        await refused({ ...valid, batch_size: '10' }, ['batch_size']);
        await refused({ ...valid, batch_size: 1.5 }, ['batch_size']);
        await refused({ ...valid, description: 'x'.repeat(201) }, ['description']);
        await refused({ ...valid, batchSize: 10 }, ['batchSize']);
        // 200 characters (emoji count as one each) are allowed.
        const long = await tenant.post('/v1/webhooks', { ...valid, description: '🚚'.repeat(200) });
        assert.equal(long.status, 201, long.text);
        const listed = await tenant.get('/v1/webhooks');
        assert.equal(listed.body.data.length, 1, 'nothing refused was written');
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('a URL that reaches inside is refused at registration, whatever its spelling', async () => {
      const tenant = await client(await backend.db());
      try {
        for (const url of [
          'https://127.0.0.1/hooks',
          'https://0x7f.1/hooks',
          'https://2130706433/hooks',
          'https://127.1/hooks',
          'https://[::1]/hooks',
          'https://[::ffff:127.0.0.1]/hooks',
          'https://[fc00::1]/hooks',
          'https://[fe80::1]/hooks',
          'https://169.254.169.254/latest/meta-data',
          'https://0.0.0.0/hooks',
          'https://100.64.0.1/hooks',
          'https://192.168.1.10/hooks',
          'https://inside.example.com/hooks',
          'https://mixed.example.com/hooks',
          'https://meta.example.com/hooks',
          'https://unknown.example.com/hooks',
          // Plain http:// only inside WEBHOOK_ALLOWED_NETWORKS, even to a public address.
          'http://erp.example.com/hooks',
        ]) {
          const response = await tenant.post('/v1/webhooks', { ...valid, url });
          assert.equal(response.status, 400, `${url}: ${response.text}`);
          assert.equal(response.body.errors[0].field, 'url', url);
        }
        assert.equal((await tenant.get('/v1/webhooks')).body.data.length, 0);
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('WEBHOOK_ALLOWED_NETWORKS lets an endpoint inside them, over http:// too', async () => {
      const db = await backend.db();
      const tenant = await ownedTenantApp(db, {
        config: {
          tokenSecret: undefined,
          tokenTtlSeconds: 3600,
          webhookAllowedNetworks: [{ address: '10.0.0.0', prefix: 8, family: 'ipv4' }],
        },
        webhooks: testWebhookSettings({ rules: undefined, resolve }),
      });
      try {
        const inside = await tenant.post('/v1/webhooks', {
          ...valid,
          url: 'http://inside.example.com/hooks',
        });
        assert.equal(inside.status, 201, inside.text);
        const loopback = await tenant.post('/v1/webhooks', { ...valid, url: 'https://127.0.0.1/hooks' });
        assert.equal(loopback.status, 400);
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('a tenant has at most 16 endpoints; the 17th is refused with 409', async () => {
      const tenant = await client(await backend.db());
      try {
        const answers = await Promise.all(
          Array.from({ length: 17 }, () => tenant.post('/v1/webhooks', { ...valid, resources: ['prices'] })),
        );
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(statuses, [...Array(16).fill(201), 409]);
        const refused = answers.find((a) => a.status === 409)!;
        assert.deepEqual(refused.body, {
          statusCode: 409,
          errors: [{ message: 'A tenant may have at most 16 webhook endpoints' }],
        });
        assert.equal((await tenant.get('/v1/webhooks')).body.data.length, 16);
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('PATCH changes fields; a resource added starts now; DELETE removes; rotation gives a new secret', async () => {
      const tenant = await client(await backend.db());
      try {
        const { body: created } = await tenant.post('/v1/webhooks', valid);
        const patch = (body: unknown) =>
          tenant.send({
            method: 'PATCH',
            path: `/v1/webhooks/${created.id}`,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
        const changed = await patch({
          resources: ['deliveries', 'prices'],
          batch_size: 7,
          description: 'nightly',
          status: 'paused',
        });
        assert.equal(changed.status, 200, changed.text);
        assert.deepEqual(changed.body.resources, ['deliveries', 'prices']);
        assert.deepEqual(Object.keys(changed.body.positions), ['deliveries', 'prices']);
        assert.equal(
          changed.body.positions.deliveries,
          created.positions.deliveries,
          'a kept resource keeps its place',
        );
        assert.equal(changed.body.batch_size, 7);
        assert.equal(changed.body.description, 'nightly');
        assert.equal(changed.body.status, 'paused');
        assert.equal((await patch({ status: 'disabled' })).status, 400);
        assert.equal((await patch({})).status, 400);
        assert.equal((await patch({ url: 'https://127.0.0.1/x' })).body.errors[0].field, 'url');
        assert.equal((await patch({ status: 'active' })).body.status, 'active');

        const rotated = await tenant.send({
          method: 'POST',
          path: `/v1/webhooks/${created.id}/rotate-secret`,
        });
        assert.equal(rotated.status, 200, rotated.text);
        assert.match(rotated.body.secret, SECRET);
        assert.notEqual(rotated.body.secret, created.secret);

        const removed = await tenant.send({ method: 'DELETE', path: `/v1/webhooks/${created.id}` });
        assert.equal(removed.status, 204);
        const gone = await tenant.get(`/v1/webhooks/${created.id}`);
        assert.equal(gone.status, 404);
        assert.deepEqual(gone.body, { statusCode: 404, errors: [{ message: 'Webhook endpoint not found' }] });
      } finally {
        await tenant.transport.app.close();
      }
    });

    test("another tenant's endpoint is not found, by every route", async () => {
      const db = await backend.db();
      const owner = await client(db);
      const other = await ownedTenantApp(db, {}, { app: owner.transport.app });
      try {
        const { body: created } = await owner.post('/v1/webhooks', valid);
        const path = `/v1/webhooks/${created.id}`;
        const answers = [
          await other.get(path),
          await other.get(`${path}/deliveries`),
          await other.send({
            method: 'PATCH',
            path,
            headers: { 'content-type': 'application/json' },
            body: '{"status":"paused"}',
          }),
          await other.send({ method: 'DELETE', path }),
          await other.send({ method: 'POST', path: `${path}/rotate-secret` }),
          await other.post(`${path}/replay`, { resource: 'customers' }),
          await other.send({ method: 'POST', path: `${path}/ping` }),
          await other.send({ method: 'POST', path: `${path}/retry` }),
        ];
        for (const answer of answers) {
          assert.equal(answer.status, 404, answer.text);
          assert.deepEqual(answer.body.errors, [{ message: 'Webhook endpoint not found' }]);
        }
        assert.deepEqual((await other.get('/v1/webhooks')).body, { data: [] });
        const mine = await owner.get(path);
        assert.equal(mine.body.status, 'active', 'nothing the other tenant sent changed it');
      } finally {
        await owner.transport.app.close();
      }
    });

    test('replay and the deliveries log check what they are given', async () => {
      const tenant = await client(await backend.db());
      try {
        const { body: created } = await tenant.post('/v1/webhooks', valid);
        const replay = (body: unknown) => tenant.post(`/v1/webhooks/${created.id}/replay`, body);
        assert.deepEqual((await replay({ resource: 'prices' })).body.errors, [
          { field: 'resource', message: "Must be one of the endpoint's resources: customers, deliveries" },
        ]);
        assert.deepEqual((await replay({ resource: 'nonsense' })).body.errors, [
          { field: 'resource', message: "Must be one of the endpoint's resources: customers, deliveries" },
        ]);
        assert.equal((await replay({ resource: 'customers', after: 'nope' })).body.errors[0].field, 'after');
        const otherCursor = created.positions.deliveries;
        assert.equal(
          (await replay({ resource: 'customers', after: otherCursor })).body.errors[0].field,
          'after',
        );
        // Missing or not the endpoint's: one message, naming the endpoint's resources and no other; a
        // refused resource leaves its cursor unread.
        const notOurs = "Must be one of the endpoint's resources: customers, deliveries";
        const unknown = { field: 'colour', message: 'Unknown field' };
        for (const body of [{ colour: 1 }, { colour: 1, resource: 'prices', after: 5 }]) {
          const refused = await replay(body);
          assert.equal(refused.status, 400);
          assert.deepEqual(refused.body.errors, [unknown, { field: 'resource', message: notOurs }]);
        }
        for (const after of [5, 'nope']) {
          const refused = await replay({ colour: 1, resource: 'customers', after });
          assert.deepEqual(refused.body.errors, [unknown, { field: 'after', message: inputMessages.after }]);
        }
        assert.deepEqual((await replay([])).body.errors, [{ field: null, message: inputMessages.object }]);
        const accepted = await replay({ resource: 'customers', after: created.positions.customers });
        assert.equal(accepted.status, 202, accepted.text);
        assert.equal((await replay({ resource: 'customers' })).status, 202);

        for (const limit of ['0', '101', 'x']) {
          const response = await tenant.get(`/v1/webhooks/${created.id}/deliveries?limit=${limit}`);
          assert.equal(response.status, 400);
          assert.equal(response.body.errors[0].field, 'limit');
        }
        assert.deepEqual((await tenant.get(`/v1/webhooks/${created.id}/deliveries`)).body, { data: [] });
      } finally {
        await tenant.transport.app.close();
      }
    });

    test('an Idempotency-Key makes POST /v1/webhooks answer once: the same endpoint and secret', async () => {
      const tenant = await client(await backend.db());
      try {
        const headers = { 'idempotency-key': 'create-erp-hook-1' };
        const first = await tenant.post('/v1/webhooks', valid, headers);
        const again = await tenant.post('/v1/webhooks', valid, headers);
        assert.equal(first.status, 201);
        assert.equal(again.status, 201);
        assert.equal(again.text, first.text);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.equal((await tenant.get('/v1/webhooks')).body.data.length, 1);
        const other = await tenant.post('/v1/webhooks', { ...valid, batch_size: 5 }, headers);
        assert.equal(other.status, 422);
      } finally {
        await tenant.transport.app.close();
      }
    });
  });
}
