import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { VERSION } from '../../src/version.js';
import { appForNewTenant, seedProducts, testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { outputOf } from '../helpers/child-output.js';
import { startFirstServe } from '../helpers/first-start.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The value of one series in Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('the version of package.json: --version and GET /health', async () => {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  assert.equal(VERSION, version);
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), '--version'], {
    cwd: ROOT,
  });
  const { code, stdout } = await outputOf(child);
  assert.equal(code, 0);
  assert.equal(stdout, `${version}\n`);
});

test('METRICS_PORT and METRICS_HOST settings', () => {
  assert.equal(loadConfig({}).metricsPort, undefined);
  assert.equal(loadConfig({}).metricsHost, '127.0.0.1');
  assert.equal(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }).metricsPort, 9464);
  assert.equal(loadConfig({ METRICS_PORT: '0' }).metricsPort, 0);
  assert.throws(() => loadConfig({ METRICS_PORT: '70000' }), /METRICS_PORT must be a whole number/);
});

for (const backend of backends()) {
  describe(`metrics and request ids (${backend.name})`, () => {
    test('requests by route pattern, batches by resource, pool usage; one registry per app', async () => {
      const db = await backend.db();
      const tenant = await appForNewTenant(db);
      await seedProducts(tenant, ['M-1', 'M-2']);
      const upsert = await tenant.post('/api/products/batch-create', [
        { code: 'M-1', description: 'changed' },
        { code: 'M-3', description: 'new' },
        { code: 'M-3', description: 'new again' },
      ]);
      assert.equal(upsert.status, 201);
      const invalid = await tenant.post('/api/stocks/batch-create', [{ product_code: 'M-1' }]);
      assert.equal(invalid.status, 400);
      assert.equal((await tenant.get('/v1/customers?limit=5')).status, 200);
      assert.equal((await tenant.get('/nothing/here/12345')).status, 404);

      const text = await tenant.transport.app.metrics.registry.metrics();
      const products = 'route="/api/products/batch-create",method="POST"';
      assert.equal(sample(text, `sfa_http_requests_total{${products},status_code="201"}`), 2);
      assert.equal(sample(text, `sfa_http_request_duration_seconds_count{${products},status_code="201"}`), 2);
      assert.equal(
        sample(
          text,
          'sfa_http_requests_total{route="/api/stocks/batch-create",method="POST",status_code="400"}',
        ),
        1,
      );
      assert.equal(
        sample(text, 'sfa_http_requests_total{route="/v1/customers",method="GET",status_code="200"}'),
        1,
      );
      assert.equal(
        sample(text, 'sfa_http_requests_total{route="/token",method="POST",status_code="200"}'),
        1,
      );
      // A URL that matched no route is one series, never the raw URL.
      assert.equal(
        sample(text, 'sfa_http_requests_total{route="(unmatched)",method="GET",status_code="404"}'),
        1,
      );
      assert.ok(!text.includes('/nothing/here'));

      assert.equal(sample(text, 'sfa_batch_items_count{resource="products"}'), 2);
      assert.equal(sample(text, 'sfa_batch_items_sum{resource="products"}'), 5);
      assert.equal(sample(text, 'sfa_batch_items_bucket{le="1",resource="products"}'), 0);
      assert.equal(sample(text, 'sfa_batch_items_bucket{le="10",resource="products"}'), 2);
      assert.equal(sample(text, 'sfa_batch_rows_total{resource="products",outcome="created"}'), 3);
      assert.equal(sample(text, 'sfa_batch_rows_total{resource="products",outcome="updated"}'), 1);
      assert.equal(sample(text, 'sfa_batch_rows_total{resource="products",outcome="ignored"}'), 1);
      // An invalid batch writes nothing: no batch observed.
      assert.equal(sample(text, 'sfa_batch_items_count{resource="stocks"}'), undefined);

      assert.equal(sample(text, `sfa_build_info{version="${VERSION}"}`), 1);
      assert.equal(sample(text, `sfa_db_info{backend="${backend.name}"}`), 1);
      if (backend.name === 'postgres') {
        assert.equal(sample(text, 'sfa_db_pool_max_connections'), 4);
        const total = sample(text, 'sfa_db_pool_connections')!;
        assert.ok(total >= 1 && total <= 4, `pool connections ${total}`);
        assert.equal(sample(text, 'sfa_db_pool_idle_connections'), total);
        assert.equal(sample(text, 'sfa_db_pool_waiting_clients'), 0);
      } else {
        assert.equal(sample(text, 'sfa_db_pool_max_connections'), 1);
        assert.equal(sample(text, 'sfa_db_pool_connections'), 1);
        assert.equal(sample(text, 'sfa_db_pool_idle_connections'), undefined);
      }

      // Another app on the same database counts only its own requests.
      const other = await appForNewTenant(db);
      const otherText = await other.transport.app.metrics.registry.metrics();
      assert.equal(sample(otherText, `sfa_http_requests_total{${products},status_code="201"}`), undefined);
      assert.equal(sample(otherText, 'sfa_batch_items_count{resource="products"}'), undefined);
    });

    test('X-Request-Id: a well-formed one is kept and echoed, else a UUID; on every answer', async () => {
      const tenant = await appForNewTenant(await backend.db());
      const { app } = tenant.transport;
      const given = await app.inject({ url: '/health', headers: { 'x-request-id': 'erp-run-42/7' } });
      assert.equal(given.headers['x-request-id'], 'erp-run-42/7');
      assert.deepEqual(given.json(), { status: 'ok', version: VERSION });

      const generated = [
        await app.inject({ url: '/health' }),
        await app.inject({ url: '/health', headers: { 'x-request-id': 'x'.repeat(129) } }),
        await app.inject({ url: '/health', headers: { 'x-request-id': 'two words' } }),
      ].map((response) => String(response.headers['x-request-id']));
      for (const id of generated) assert.match(id, UUID);
      assert.equal(new Set(generated).size, 3);

      // Refused before the route runs (401), over the body limit (413), no route (404), invalid (400).
      const refused = await app.inject({
        method: 'POST',
        url: '/api/products/batch-create',
        headers: { 'content-type': 'application/json', 'x-request-id': 'r-401' },
        payload: '[]',
      });
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.headers['x-request-id'], 'r-401');
      const tooLarge = await app.inject({
        method: 'POST',
        url: '/api/stocks/batch-create',
        headers: { ...tenant.headers, 'content-type': 'application/json', 'x-request-id': 'r-413' },
        payload: `[${' '.repeat(7 * 1024 * 1024)}]`,
      });
      assert.equal(tooLarge.statusCode, 413);
      assert.equal(tooLarge.headers['x-request-id'], 'r-413');
      const missing = await app.inject({ url: '/missing', headers: { 'x-request-id': 'r-404' } });
      assert.equal(missing.headers['x-request-id'], 'r-404');
      const invalid = await tenant.post('/api/stocks/batch-create', [{}], { 'x-request-id': 'r-400' });
      assert.equal(invalid.status, 400);
    });

    test('METRICS_PORT: GET /metrics on its own listener, opened and closed with the app, not on the API', async () => {
      const db = await backend.db();
      const app = await buildApp({
        db,
        config: { ...testAuthConfig, metricsPort: 0, metricsHost: '127.0.0.1' },
        logLevel: 'silent',
      });
      let closed = false;
      after(async () => {
        if (!closed) await app.close();
      });
      await app.ready();
      assert.match(app.metrics.url ?? '', /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      await app.inject({ url: '/health' });
      const scraped = await fetch(app.metrics.url!);
      assert.equal(scraped.status, 200);
      assert.match(scraped.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await scraped.text();
      assert.equal(
        sample(text, 'sfa_http_requests_total{route="/health",method="GET",status_code="200"}'),
        1,
      );
      // Node.js process metrics come with the listener.
      assert.ok(text.includes('\nprocess_resident_memory_bytes '), 'process metrics');
      assert.ok(text.includes('\nnodejs_eventloop_lag_seconds '), 'event loop metrics');

      assert.equal((await fetch(app.metrics.url!.replace('/metrics', '/health'))).status, 404);
      assert.equal((await app.inject({ url: '/metrics' })).statusCode, 404);

      await app.close();
      closed = true;
      await assert.rejects(fetch(app.metrics.url!), 'the listener closes with the app');
    });
  });
}

test('a started server logs one JSON line per answer with request id, route, tenant, status and duration; METRICS_PORT serves metrics', async () => {
  const server = await startFirstServe({ METRICS_PORT: '0', LOG_LEVEL: 'info' }, (stdout) =>
    stdout.includes('"metrics listening"'),
  );
  const [key, clientId, clientSecret, base] = [
    'subscription key',
    'client id',
    'client secret',
    'base URL',
  ].map((label) => server.printed(label)) as [string, string, string, string];
  const logs = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
  const metricsUrl = logs().find((line) => line.msg === 'metrics listening').url as string;
  assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  assert.notEqual(new URL(metricsUrl).port, new URL(base).port);

  const token = await fetch(`${base}/token?client_secret=${clientSecret}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString(),
  });
  assert.equal(token.status, 200);
  const { access_token: accessToken } = (await token.json()) as { access_token: string };
  const batch = await fetch(`${base}/api/stocks/batch-create`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'subscription-key': key,
      authorization: `Bearer ${accessToken}`,
      'x-request-id': 'erp-batch-0001',
    },
    body: JSON.stringify([
      { product_code: 'CAFE-500', location: 'LOG-01', quantity: 1 },
      { product_code: 'CAFE-500', location: 'LOG-02', quantity: 2 },
    ]),
  });
  assert.equal(batch.status, 201);
  assert.equal(batch.headers.get('x-request-id'), 'erp-batch-0001');
  const health = await fetch(`${base}/health`);
  assert.deepEqual(await health.json(), { status: 'ok', version: VERSION });
  const generatedId = health.headers.get('x-request-id')!;
  assert.match(generatedId, UUID);

  const metrics = await (await fetch(metricsUrl)).text();
  assert.equal(
    sample(
      metrics,
      'sfa_http_requests_total{route="/api/stocks/batch-create",method="POST",status_code="201"}',
    ),
    1,
  );
  assert.equal(sample(metrics, 'sfa_batch_rows_total{resource="stocks",outcome="created"}'), 2);
  assert.equal(sample(metrics, 'sfa_db_info{backend="pglite"}'), 1);
  assert.equal((await fetch(`${base}/metrics`)).status, 404, 'no /metrics on the API port');

  assert.equal(await server.stop(), 0);
  const lines = logs();
  const ofBatch = lines.filter((line) => line.reqId === 'erp-batch-0001');
  const completed = ofBatch.find((line) => line.msg === 'request completed');
  assert.ok(completed, JSON.stringify(ofBatch));
  assert.equal(completed.route, '/api/stocks/batch-create');
  assert.equal(completed.method, 'POST');
  assert.equal(completed.status, 201);
  assert.equal(typeof completed.durationMs, 'number');
  assert.equal(typeof completed.tenant, 'number');
  assert.equal(completed.level, 30);
  const written = ofBatch.find((line) => line.msg === 'batch written');
  assert.deepEqual([written.resource, written.items, written.created], ['stocks', 2, 2]);
  const healthLine = lines.find((line) => line.reqId === generatedId && line.msg === 'request completed');
  assert.equal(healthLine.route, '/health');
  assert.equal(healthLine.tenant, undefined, 'no tenant before the guard identifies one');
  // Credentials never reach the log, even one put in a query string.
  const tokenLine = lines.find(
    (line) => line.msg === 'incoming request' && line.req.url.startsWith('/token'),
  );
  assert.equal(tokenLine.req.url, '/token?client_secret=[redacted]');
  const logText = lines.map((line) => JSON.stringify(line)).join('\n');
  for (const secret of [key, clientSecret, accessToken]) assert.ok(!logText.includes(secret));
});
