import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { until } from '../helpers/jobs.js';
import { customer, delivery } from '../helpers/read-data.js';
import { servedBackends } from '../helpers/served-settings.js';
import { fitsWidth, launch, servedConsole, tabTo, watchedPage } from './console-browser.js';

/*
 * The Webhooks, Deliveries and Customers pages in a browser (extensions.md 14): an endpoint made
 * against a loopback receiver, its secret shown once and copied, its attempts, pause, resume, retry
 * now; a refused change showing the API's message; ping, rotate, replay, delete; deliveries rejected
 * and requeued with the keyboard alone (signing in included), one acknowledged; customers paged and
 * filtered, a name of markup shown as its characters; 390 px.
 */

const XSS = '<img src=x onerror=alert(1)>';

/** A receiver that answers every delivery with `status`. */
async function receiver() {
  const state = { status: 503, bodies: [] as string[] };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      state.bodies.push(body);
      res.writeHead(state.status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => new Promise((done) => server.close(done)));
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/sfa` };
}

describe('the console: webhooks, deliveries, customers', () => {
  const browser = launch();
  for (const backend of servedBackends) {
    test(`${backend}: endpoints, attempts, deliveries by keyboard, customers`, {
      timeout: 300_000,
    }, async () => {
      const served = await servedConsole(backend);
      const hook = await receiver();
      const watched = await watchedPage(await browser, served.url);
      const { page, context } = watched;
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: served.url });
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });

      // Signing in with the keyboard alone.
      await page.goto(`${served.url}/console`);
      await tabTo(page, page.getByLabel('Subscription key'));
      await page.keyboard.type(served.credentials.subscriptionKey);
      await page.keyboard.press('Tab');
      await page.keyboard.type(served.credentials.clientId);
      await page.keyboard.press('Tab');
      await page.keyboard.type(served.credentials.clientSecret);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();

      // A new endpoint: the secret is shown once, and copied.
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByLabel('URL').fill(hook.url);
      await page.getByLabel('Description').fill('ERP test receiver');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = page.getByLabel('Signing secret (shown once: keep it now)');
      await secret.waitFor();
      const shown = await secret.inputValue();
      assert.match(shown, /^whsec_[A-Za-z0-9+/]{43}=$/);
      await page.getByRole('button', { name: 'Copy secret' }).click();
      await page.getByText('Copied.').waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown);
      await page.getByRole('button', { name: 'Done' }).click();
      assert.equal(await page.getByText(shown).count(), 0, 'shown once');
      const card = page.getByRole('article').filter({ has: page.getByRole('heading', { name: hook.url }) });
      await card.locator('.state', { hasText: 'active' }).waitFor();

      // Changes to deliver; the receiver refuses them: the attempts show it.
      const customers = Array.from({ length: 24 }, (_, at) => customer(`C-${String(at).padStart(2, '0')}`));
      customers.push(customer('XSS-1', { name: XSS }));
      const loaded = await served.tenant.post('/api/customers/batch-create', customers);
      assert.equal(loaded.status, 201, loaded.text);
      const deliveries = await served.tenant.post('/api/deliveries/batch-create', [
        delivery('D-1', { client_id: 'C-01' }),
        delivery('D-2', { client_id: 'C-02' }),
      ]);
      assert.equal(deliveries.status, 201, deliveries.text);
      await card.getByRole('button', { name: 'Attempts' }).click();
      await card.locator('td[data-label="Status"]', { hasText: '503' }).first().waitFor();
      await card.getByText(/^customers: \d/).waitFor();

      // Pause, resume, then retry now once the receiver takes them.
      await card.getByRole('button', { name: 'Pause' }).click();
      await card.locator('.state', { hasText: 'paused' }).waitFor();
      await card.getByRole('button', { name: 'Resume' }).click();
      await card.locator('.state', { hasText: 'active' }).waitFor();
      hook.state.status = 200;
      await card.getByRole('button', { name: 'Retry now' }).click();
      await card.getByText('Retry scheduled').waitFor();
      await card.locator('td[data-label="Status"]', { hasText: '200' }).first().waitFor();
      assert.ok(hook.state.bodies.some((body) => body.includes('"XSS-1"')));

      // A refused change: the API's own message beside the form.
      const id = (await card.locator('dd').first().textContent())!;
      const refusal = await served.tenant.send({
        method: 'PATCH',
        path: `/v1/webhooks/${id}`,
        body: JSON.stringify({ url: 'ftp://erp.example.com/hooks' }),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(refusal.status, 400, refusal.text);
      const message = (refusal.body as any).errors[0].message as string;
      await card.getByRole('button', { name: 'Edit' }).click();
      await card.getByLabel('URL').fill('ftp://erp.example.com/hooks');
      await card.getByRole('button', { name: 'Save' }).click();
      const alert = card.locator('form').getByRole('alert');
      await alert.waitFor();
      assert.ok(
        (await alert.textContent())?.includes(message),
        `${await alert.textContent()} shows "${message}"`,
      );
      await card.getByRole('button', { name: 'Cancel' }).click();

      // Ping, rotate (a new secret, shown once), replay from the start (sent again).
      await card.getByRole('button', { name: 'Ping' }).click();
      await card.getByText(/^Ping: 200 in \d+ ms\.$/).waitFor();
      await card.getByRole('button', { name: 'Rotate secret' }).click();
      const rotated = card.getByLabel('New signing secret (shown once)');
      await rotated.waitFor();
      assert.match(await rotated.inputValue(), /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(await rotated.inputValue(), shown);
      await card.getByRole('button', { name: 'Done' }).click();
      await rotated.waitFor({ state: 'detached' });
      const sentOnce = hook.state.bodies.filter((body) => body.includes('"XSS-1"')).length;
      await card.getByRole('button', { name: 'Replay' }).click();
      await card.getByLabel('Replay resource').selectOption('customers');
      await card.locator('form').getByRole('button', { name: 'Replay' }).click();
      await card.getByText('Replay of customers scheduled.').waitFor();
      await until(
        async () => hook.state.bodies.filter((body) => body.includes('"XSS-1"')).length,
        (sent) => sent > sentOnce,
        'the replay sends XSS-1 again',
      );

      // 390 px wide.
      await page.setViewportSize({ width: 390, height: 844 });
      await fitsWidth(page);
      await page.setViewportSize({ width: 1280, height: 900 });

      // Delete, confirmed: the card goes, the API lists no endpoint.
      await card.getByRole('button', { name: 'Delete' }).click();
      await card.getByRole('button', { name: 'Confirm delete' }).click();
      await card.waitFor({ state: 'detached' });
      assert.deepEqual((await served.tenant.get('/v1/webhooks')).body.data, []);

      // Deliveries, keyboard alone: reject with a reason, then requeue.
      await tabTo(page, page.getByRole('link', { name: 'Deliveries' }));
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Deliveries', level: 1 }).waitFor();
      await tabTo(page, page.getByLabel('Select D-1'));
      await page.keyboard.press('Space');
      await tabTo(page, page.getByLabel('Reason'));
      await page.keyboard.type('customer unknown to the ERP');
      await tabTo(page, page.getByRole('button', { name: 'Reject selected' }));
      await page.keyboard.press('Enter');
      await page.getByText('1 rejected.').waitFor();
      await page.getByLabel('Select D-1').waitFor({ state: 'detached' });
      await tabTo(page, page.getByRole('button', { name: 'Rejected' }));
      await page.keyboard.press('Enter');
      await page.locator('td[data-label="Reason"]', { hasText: 'customer unknown to the ERP' }).waitFor();
      await tabTo(page, page.getByLabel('Select D-1'));
      await page.keyboard.press('Space');
      await tabTo(page, page.getByRole('button', { name: 'Requeue selected' }));
      await page.keyboard.press('Enter');
      await page.getByText('1 requeued.').waitFor();
      const pending = await served.tenant.get('/v1/deliveries/pending');
      assert.deepEqual((pending.body as any).data.map((d: any) => d.code).sort(), ['D-1', 'D-2']);
      // Acknowledged: gone from the pending list, the API's and the page's.
      await page.getByRole('button', { name: 'Pending' }).click();
      await page.getByLabel('Select D-2').check();
      await page.getByRole('button', { name: 'Acknowledge selected' }).click();
      await page.getByText('1 acknowledged.').waitFor();
      await page.getByLabel('Select D-2').waitFor({ state: 'detached' });
      const left = await served.tenant.get('/v1/deliveries/pending');
      assert.deepEqual(
        (left.body as any).data.map((d: any) => d.code),
        ['D-1'],
      );

      // Customers: paged, filtered; a name of markup is its characters.
      await page.getByRole('link', { name: 'Customers' }).click();
      await page.getByLabel('Per page').selectOption('10');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('Page 1 of 3 (25 records)').waitFor();
      await page.getByRole('button', { name: 'Next page' }).click();
      await page.getByText('Page 2 of 3 (25 records)').waitFor();
      await page.getByLabel('Sort').selectOption('created_at');
      await page.getByLabel('Customer code').fill('XSS-1');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByText('Page 1 of 1 (1 records)').waitFor();
      assert.equal(await page.locator('td[data-label="Name"]').textContent(), XSS);
      assert.equal(await page.locator('main img').count(), 0);
      // A refused filter: the API's message.
      await page.getByLabel('Created from (yyyy-mm-dd)').fill('yesterday');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.getByRole('alert').filter({ hasText: 'created_from' }).waitFor();

      assert.deepEqual(dialogs, [], 'no script of a value ran');
      watched.clean();
    });
  }
});
