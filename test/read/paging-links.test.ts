import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isWellFormedHost } from '../../src/routes/v1/list-route-links.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer } from '../helpers/read-data.js';

const WELL_FORMED = [
  'localhost',
  'api.example.com',
  'api.example.com:8443',
  '10.0.0.7:3000',
  '[::1]',
  '[2001:db8::1]:443',
];
const MALFORMED = [
  'a"b<script>',
  '<script>alert(1)</script>',
  'evil.example/phish?',
  'evil.example#',
  'user@evil.example',
  'a b',
  'a%2Fb',
  'host:',
  'host:99999',
  'host:12x',
  '[not-an-address]',
  '[::1',
  "it's",
  '',
];

test('a well-formed host is a name, an IPv4 or a bracketed IPv6 address, and a port', () => {
  for (const host of WELL_FORMED) assert.ok(isWellFormedHost(host), host);
  for (const host of MALFORMED) assert.ok(!isWellFormedHost(host), host);
});

for (const backend of backends()) {
  describe(`paging links on ${backend.name}`, () => {
    test('a malformed Host never reaches a link: the links are relative', async () => {
      const tenant = await appForNewTenant(await backend.db());
      await tenant.post('/api/customers/batch-create', [customer('L1'), customer('L2')]);
      for (const host of MALFORMED.filter(Boolean)) {
        const { status, body } = await tenant.get('/v1/customers?limit=1', { host });
        assert.equal(status, 200, host);
        assert.deepEqual(
          body.links,
          {
            self: '/v1/customers?sort=-created_at&page=1&limit=1',
            first: '/v1/customers?sort=-created_at&page=1&limit=1',
            last: '/v1/customers?sort=-created_at&page=2&limit=1',
            prev: null,
            next: '/v1/customers?sort=-created_at&page=2&limit=1',
          },
          host,
        );
      }
    });

    test('a well-formed Host is kept, with the route path rather than the URL as typed', async () => {
      const tenant = await appForNewTenant(await backend.db());
      for (const host of WELL_FORMED) {
        const { body } = await tenant.get('/v1/customers?limit=1', { host });
        assert.equal(body.links.self, `http://${host}/v1/customers?sort=-created_at&page=1&limit=1`);
      }
      const encoded = await tenant.get('/v1/%63ustomers?limit=1', { host: 'api.example.com' });
      assert.equal(encoded.status, 200);
      assert.equal(
        encoded.body.links.self,
        'http://api.example.com/v1/customers?sort=-created_at&page=1&limit=1',
      );
    });

    test('behind a trusted proxy, a malformed X-Forwarded-Host or -Proto gives relative links', async () => {
      const tenant = await appForNewTenant(await backend.db(), { trustProxy: true });
      const cases: Record<string, string>[] = [
        { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'a"b<script>' },
        { 'x-forwarded-proto': 'javascript', 'x-forwarded-host': 'api.example.com' },
      ];
      for (const headers of cases) {
        const { body } = await tenant.get('/v1/customers?limit=1', headers);
        assert.equal(
          body.links.self,
          '/v1/customers?sort=-created_at&page=1&limit=1',
          JSON.stringify(headers),
        );
      }
      const good = await tenant.get('/v1/customers?limit=1', {
        'x-forwarded-proto': 'HTTPS',
        'x-forwarded-host': 'api.example.com',
      });
      assert.equal(
        good.body.links.self,
        'https://api.example.com/v1/customers?sort=-created_at&page=1&limit=1',
      );
    });

    test('PUBLIC_BASE_URL: every link starts with it, whatever Host or X-Forwarded-Host says', async () => {
      const publicBaseUrl = 'https://erp.example.com/backoffice';
      const tenant = await appForNewTenant(await backend.db(), { publicBaseUrl, trustProxy: true });
      await tenant.post('/api/customers/batch-create', [customer('P1'), customer('P2')]);
      const headers = {
        host: 'a"b<script>',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'http',
      };
      const customers = await tenant.get('/v1/customers?limit=1', headers);
      assert.equal(
        customers.body.links.self,
        `${publicBaseUrl}/v1/customers?sort=-created_at&page=1&limit=1`,
      );
      assert.equal(
        customers.body.links.next,
        `${publicBaseUrl}/v1/customers?sort=-created_at&page=2&limit=1`,
      );
      const pending = await tenant.get('/v1/deliveries/pending', headers);
      assert.equal(pending.status, 200, JSON.stringify(pending.body));
      assert.match(
        pending.body.links.self,
        /^https:\/\/erp\.example\.com\/backoffice\/v1\/deliveries\/pending\?/,
      );
    });
  });
}
