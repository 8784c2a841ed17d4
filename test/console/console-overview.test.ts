import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { customer } from '../helpers/read-data.js';
import { servedBackends } from '../helpers/served-settings.js';
import { fitsWidth, launch, servedConsole, signIn, watchedPage } from './console-browser.js';

/*
 * The Overview and Activity pages in a browser (extensions.md 14), against what the API did: a keyed
 * customer batch and its replay, a refused batch, a dozen product batches. The Overview is where
 * signing in lands: its counts and its week's chart; the Activity lists the requests newest first,
 * filtered by outcome and resource, paged by links.next and back; both fit 390 px.
 */

const CUSTOMERS = 1_500;
const PRODUCT_BATCHES = 12;

/** The dt/dd pairs of the Overview's card named `title`. */
async function card(page: Page, title: string): Promise<Record<string, string>> {
  return page.getByRole('region', { name: title }).evaluate((section) => {
    const pairs: Record<string, string> = {};
    for (const term of section.querySelectorAll('dt')) {
      pairs[term.textContent ?? ''] = term.nextElementSibling?.textContent ?? '';
    }
    return pairs;
  });
}

/** The Activity table's rows as the page shows them: request id, status, and the row's whole text. */
async function activityRows(page: Page): Promise<Array<{ id: string; status: string; text: string }>> {
  return page.locator('tbody tr').evaluateAll((rows) =>
    rows.map((row) => ({
      id: row.querySelector('code')?.textContent ?? '',
      status: row.querySelector('td[data-label="Status"]')?.textContent ?? '',
      text: row.textContent ?? '',
    })),
  );
}

/** Waits until the Activity table shows `count` rows (after a filter or a page change). */
async function rowsShown(page: Page, count: number): Promise<void> {
  await page.waitForFunction((n) => document.querySelectorAll('tbody tr').length === n, count);
}

describe('the console: overview and activity', () => {
  const browser = launch();
  for (const backend of servedBackends) {
    test(`${backend}: counts and the week's chart; requests filtered and paged`, {
      timeout: 300_000,
    }, async () => {
      const served = await servedConsole(backend);
      const customers = Array.from({ length: CUSTOMERS }, (_, at) => customer(`C-${at}`));
      const key = { 'idempotency-key': 'erp-customers-night-1' };
      const written = await served.tenant.post('/api/customers/batch-create', customers, key);
      assert.equal(written.status, 201, written.text);
      const replayed = await served.tenant.post('/api/customers/batch-create', customers, key);
      assert.equal(replayed.status, 201, replayed.text);
      const refused = await served.tenant.post('/api/customers/batch-create', [
        customer('BAD-1', { term: 'thirty' }),
      ]);
      assert.equal(refused.status, 400, refused.text);
      const problem = (refused.body as any).errors[0].errors[0];
      for (let at = 0; at < PRODUCT_BATCHES; at++) {
        const products = await served.tenant.post('/api/products/batch-create', [
          { code: `P-${at}`, description: 'Product' },
        ]);
        assert.equal(products.status, 201, products.text);
      }

      const watched = await watchedPage(await browser, served.url);
      const { page } = watched;
      await signIn(page, served.url, served.credentials);

      // The Overview: rows per resource, the other counts, and the week's records per hour.
      await page.getByRole('region', { name: 'Rows' }).waitFor();
      const rows = await card(page, 'Rows');
      assert.equal(rows.customers, '1,500');
      assert.equal(rows.products, String(PRODUCT_BATCHES));
      assert.equal(rows.prices, '0');
      assert.deepEqual(await card(page, 'Deliveries not acknowledged'), { pending: '0', rejected: '0' });
      assert.equal((await card(page, 'Webhook endpoints')).active, '0');
      const chart = page.getByRole('img', { name: /^Records written per hour over the last 7 days/ });
      assert.match(
        (await chart.getAttribute('aria-label')) ?? '',
        new RegExp(`: ${(CUSTOMERS + PRODUCT_BATCHES).toLocaleString('en')} in all$`),
      );
      const canvas = chart.locator('canvas');
      await canvas.waitFor();
      assert.ok(((await canvas.boundingBox())?.width ?? 0) > 300, 'the chart is drawn across its card');
      // uPlot's legend names the series drawn: the resources that wrote, no other.
      const legend = await chart.locator('.u-legend .u-series th').allTextContents();
      assert.deepEqual(
        legend
          .map((label) => label.trim())
          .slice(1)
          .sort(),
        ['customers', 'products'],
      );
      const weekRow = page.locator('tbody tr').filter({ hasText: /^customers/ });
      assert.equal(await weekRow.locator('td[data-label="Last 7 days"]').textContent(), '1,500');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForFunction(
        () => (document.querySelector('.chart canvas') as HTMLElement).offsetWidth < 390,
      );
      await fitsWidth(page);
      await page.setViewportSize({ width: 1280, height: 900 });

      // The Activity: every request, newest first.
      await page.getByRole('link', { name: 'Activity' }).click();
      await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
      await rowsShown(page, 3 + PRODUCT_BATCHES);
      const all = await activityRows(page);
      assert.match(all[0]!.text, /POST \/api\/products\/batch-create \(products\)/);
      assert.match(all.at(-1)!.text, /erp-customers-night-1/);
      assert.doesNotMatch(all.at(-1)!.text, /replayed/);
      assert.match(all.at(-2)!.text, /erp-customers-night-1 \(replayed\)/);
      assert.match(all.at(-1)!.text, /1,500 \/ 0 \/ 0/, 'created / updated / ignored');

      // Filtered: the refused batch, with the first problem its answer gave.
      await page.getByLabel('Outcome').selectOption('failed');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await rowsShown(page, 1);
      const [failed] = await activityRows(page);
      assert.equal(failed!.status, '400');
      assert.ok(
        failed!.text.includes(`item 0: ${problem.field} ${problem.message}`),
        `${failed!.text} shows the answer's problem`,
      );
      assert.equal(failed!.id, refused.headers['x-request-id']);
      await page.getByLabel('Outcome').selectOption('');
      await page.getByLabel('Resource').selectOption('customers');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await rowsShown(page, 3);

      // Paged by links.next, ten at a time, and back.
      await page.getByLabel('Resource').selectOption('');
      await page.getByLabel('Per page').selectOption('10');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await rowsShown(page, 10);
      const first = await activityRows(page);
      await page.getByRole('button', { name: 'Older requests' }).click();
      await rowsShown(page, 5);
      await page.getByText('Page 2 (5 requests)').waitFor();
      const second = await activityRows(page);
      assert.deepEqual(
        [...first, ...second].map((row) => row.id),
        all.map((row) => row.id),
        'the two pages are the list, in order',
      );
      assert.ok(await page.getByRole('button', { name: 'Older requests' }).isDisabled());
      await page.getByRole('button', { name: 'Newer requests' }).click();
      await page.getByText('Page 1 (10 requests)').waitFor();
      assert.equal((await activityRows(page))[0]!.id, all[0]!.id);

      await page.setViewportSize({ width: 390, height: 844 });
      await fitsWidth(page);
      watched.clean();
    });
  }
});
