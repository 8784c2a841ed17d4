import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { tenantClient } from '../../kit/tenant-client.js';
import { injectTransport } from '../../kit/transport.js';
import { buildApp } from '../../src/app.js';
import { DOCS_CSP } from '../../src/openapi/docs-routes.js';
import { buildOpenApiDocument } from '../../src/openapi/document.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { customer } from '../helpers/read-data.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = new URL('../../test-artifacts/docs-page.png', import.meta.url);
const doc: any = buildOpenApiDocument();

async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    assert.fail(
      `Chromium is not installed at ${CHROMIUM}: the /docs page test needs it. Install Debian's package with ` +
        '`apt-get update && apt-get install -y chromium` (never download a browser through playwright).',
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

const [backend] = backends();

describe('GET /docs in a browser', () => {
  test('under its CSP, lists every endpoint, gets a token from the credentials typed in, and sends a request', {
    timeout: 90_000,
  }, async () => {
    const db = await backend!.db();
    const tenant = await createTenant(db, `docs-${randomUUID()}`);
    const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
    after(() => app.close());
    const base = await app.listen({ host: '127.0.0.1', port: 0 });

    // One customer, loaded the way an integrator would, for the page to find.
    const loaded = await app.inject({
      method: 'POST',
      url: '/api/customers/batch-create',
      headers: (await tenantClient(injectTransport(app), tenant)).headers,
      payload: [customer('DOCS-PAGE-1')],
    });
    assert.equal(loaded.statusCode, 201, loaded.body);

    const browser = await launch();
    after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.setDefaultTimeout(20_000);
    // Everything the page needs comes from the service: any other origin is refused and recorded.
    const elsewhere: string[] = [];
    await page.route('**/*', (route) => {
      if (route.request().url().startsWith(base)) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });

    // Whatever the page's policy refuses is recorded (the listener is added before any script of the page).
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    await page.exposeFunction('recordViolation', (text: string) => refused.push(text));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) =>
        (window as any).recordViolation(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });

    const served = await page.goto(`${base}/docs`);
    const pageHeaders = served!.headers();
    assert.equal(pageHeaders['content-security-policy'], DOCS_CSP);
    assert.match(DOCS_CSP, /frame-ancestors 'none'/);
    assert.doesNotMatch(DOCS_CSP, /script-src[^;]*'unsafe-(inline|eval)'/, 'no script but the files served');
    assert.equal(pageHeaders['x-frame-options'], 'DENY');
    assert.equal(pageHeaders['x-content-type-options'], 'nosniff');
    assert.equal(pageHeaders['referrer-policy'], 'no-referrer');
    await page.waitForSelector('.opblock-summary-path');

    // The service's own page: its name, no framework logo, no top bar naming the UI's copy of the document.
    assert.equal(await page.title(), 'sfa-backoffice API reference');
    assert.equal((await page.locator('.info h1.title').textContent())?.startsWith('sfa-backoffice'), true);
    assert.equal(await page.locator('.topbar').count(), 0, 'no top bar (logo and Explore box)');
    assert.equal(await page.getByText('Explore', { exact: true }).count(), 0);
    assert.equal(await page.locator('img').count(), 0, 'no logo');
    assert.deepEqual(
      await page
        .locator('link[rel~="icon"]')
        .evaluateAll((links) => links.map((l) => l.getAttribute('href'))),
      ['/docs/static/theme/favicon.svg'],
    );
    assert.equal(await page.locator('.info a[href$="/docs/json"]').isVisible(), false);
    assert.equal(await page.locator('.info .description a[href="/openapi.json"]').count(), 1);
    const text = (await page.locator('#swagger-ui').textContent()) ?? '';
    assert.doesNotMatch(text, /backoffice-api\.md|extensions\.md|swagger|fastify/i);
    const listed = await page
      .locator('.opblock-summary-path')
      .evaluateAll((spans) => spans.map((span) => span.getAttribute('data-path')));
    // Every path, and the deliveries of the document's webhooks section (listed by their names).
    assert.deepEqual(
      new Set(listed),
      new Set([...Object.keys(doc.paths), ...Object.keys(doc.webhooks ?? {})]),
    );

    // Authorize: the subscription key, then the client credentials (the page calls POST /token).
    await page.click('button.authorize');
    await page.fill('#api_key_value', tenant.subscriptionKey);
    await page.click('button[aria-label="Apply credentials"]');
    await page.fill('#client_id_clientCredentials', tenant.clientId);
    await page.fill('#client_secret_clientCredentials', tenant.clientSecret);
    const tokenAnswer = page.waitForResponse((response) => response.url() === `${base}/token`);
    await page.click('button[aria-label="Apply given OAuth2 credentials"]');
    assert.equal((await tokenAnswer).status(), 200, 'the page got a token');
    await page.locator('.modal-ux button', { hasText: 'Logout' }).nth(1).waitFor();
    await page.locator('.modal-ux button.btn-done').first().click();

    // Try it out: GET /v1/customers with both credentials.
    const operation = page.locator('#operations-Read-listCustomers');
    await operation.locator('.opblock-summary').click();
    const answer = page.waitForResponse((response) => response.url().startsWith(`${base}/v1/customers`));
    await operation.locator('button.execute').click();
    const response = await answer;
    assert.equal(response.status(), 200);
    assert.equal(response.headers()['cache-control'], 'no-store', 'personal data is not kept by the browser');
    const sent = response.request().headers();
    assert.equal(sent['subscription-key'], tenant.subscriptionKey);
    assert.match(sent.authorization ?? '', /^Bearer \S+$/);
    // The page shows the answer: its status and its body.
    const shown = operation.locator('.live-responses-table tbody tr.response').first();
    assert.equal((await shown.locator('.response-col_status').textContent())?.trim(), '200');
    const body = await shown.locator('.response-col_description pre').first().textContent();
    assert.match(body ?? '', /DOCS-PAGE-1/);

    // A schema opened too: models render under the same policy.
    const model = page.locator('section.models article.json-schema-2020-12', { hasText: 'Customer' }).first();
    await model.locator('button.json-schema-2020-12-expand-deep-button').click();
    await model.locator('.json-schema-2020-12-property').first().waitFor();

    mkdirSync(new URL('.', SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT.pathname, fullPage: true });
    assert.deepEqual(elsewhere, [], 'no request left the service');
    assert.deepEqual(refused, [], 'nothing the page needs is refused by its policy');
  });
});
