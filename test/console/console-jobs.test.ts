import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { servedBackends } from '../helpers/served-settings.js';
import { barAtEnd, fitsWidth, launch, servedConsole, signIn, watchedPage } from './console-browser.js';

/*
 * The Jobs page in a browser (extensions.md 14): sign in, upload 50,000 prices in parts (one part's
 * request lost once and sent again), watch the bars reach their end; a file with invalid rows under
 * on_invalid=reject shows the failed job and its first problems; results download; a file dropped
 * on the zone is sent, and its refused job shows the API's own message; 390 px wide; sign-out and an expired session.
 */

const ROWS = 50_000;
const code = (at: number) => `PRODUCT-${String(at).padStart(6, '0')}`;

function pricesCsv(rows: number, invalidAt?: number): Buffer {
  let text = 'product_code,price_list,price,base_price,minimum_price,maximum_price,factor_description\n';
  for (let at = 0; at < rows; at++) {
    const price = at === invalidAt ? 'not-a-price' : `${1000 + (at % 500)}.25`;
    text += `${code(at)},LIST-GENERAL,${price},1200.50,900.00,15000.00,UNIT-BOX-12\n`;
  }
  return Buffer.from(text);
}

describe('the console: jobs', () => {
  const browser = launch();
  for (const backend of servedBackends) {
    test(`${backend}: upload in parts, live bars, a failed job's problems, downloads, refusals, 390 px`, {
      timeout: 400_000,
    }, async () => {
      const served = await servedConsole(backend);
      for (let from = 0; from < ROWS; from += 10_000) {
        const products = Array.from({ length: 10_000 }, (_, at) => ({
          code: code(from + at),
          description: 'P',
        }));
        const loaded = await served.tenant.post('/api/products/batch-create', products);
        assert.equal(loaded.status, 201, loaded.text);
      }
      const watched = await watchedPage(await browser, served.url);
      const { page } = watched;
      await signIn(page, served.url, served.credentials);
      assert.deepEqual(await watched.context.cookies(), [], 'no cookie');
      const stored = await page.evaluate(() => JSON.stringify(sessionStorage));
      assert.doesNotMatch(stored, new RegExp(served.credentials.clientSecret), 'the secret is not kept');
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();

      // The second part's first request is lost: the part is sent again, the first is not.
      const puts: string[] = [];
      await page.route('**/v1/jobs/*/parts/*', (route) => {
        const part = /\/parts\/(\d+)$/.exec(route.request().url())![1]!;
        puts.push(part);
        if (part === '2' && puts.filter((p) => p === '2').length === 1) return route.abort('connectionreset');
        return route.fallback();
      });
      const file = pricesCsv(ROWS);
      assert.ok(file.length > 2 * 1024 * 1024, `${file.length} bytes: parts of 1 MiB`);
      await page.getByLabel('File (choose, or drop it here)').setInputFiles({
        name: 'prices.csv',
        mimeType: 'text/csv',
        buffer: file,
      });
      await page.getByLabel('Resource').selectOption('prices');
      await page.getByRole('button', { name: 'Upload' }).click();
      const bytes = page.getByRole('progressbar', { name: 'Bytes sent' });
      await barAtEnd(bytes, file.length);
      await page
        .getByRole('status')
        .filter({ hasText: /^Sent: job / })
        .waitFor();
      const parts = Math.ceil(file.length / (1024 * 1024));
      assert.deepEqual(puts, ['1', '2', ...Array.from({ length: parts - 1 }, (_, at) => String(at + 2))]);
      const row = page.locator('tbody tr').first();
      await barAtEnd(row.getByRole('progressbar', { name: 'Rows checked' }), ROWS);
      await barAtEnd(row.getByRole('progressbar', { name: 'Rows written' }), ROWS);
      await row.getByText('succeeded').waitFor();
      await page.unroute('**/v1/jobs/*/parts/*');

      // Invalid rows under on_invalid=reject: the job fails, its page lists the first problems.
      await page.getByLabel('File (choose, or drop it here)').setInputFiles({
        name: 'bad-prices.csv',
        mimeType: 'text/csv',
        buffer: pricesCsv(100, 41),
      });
      await page.getByLabel('Invalid rows').selectOption('reject');
      await page.getByRole('button', { name: 'Upload' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Sent: job / })
        .waitFor();
      await page
        .getByRole('status')
        .filter({ hasText: /^Sent: job / })
        .getByRole('link')
        .click();
      await page.getByRole('heading', { name: 'First problems' }).waitFor();
      assert.equal(await page.locator('.facts .state').textContent(), 'failed');
      assert.match((await page.getByRole('alert').first().textContent()) ?? '', /1 of 100 rows are invalid/);
      assert.match((await page.locator('.problems li').first().textContent()) ?? '', /^Line 43: price: /);

      // The failed rows' results, downloaded.
      const downloading = page.waitForEvent('download');
      await page.getByRole('button', { name: /^Download failed rows/ }).click();
      const download = await downloading;
      const lines = readFileSync((await download.path())!, 'utf8')
        .trim()
        .split('\n');
      assert.equal(lines.length, 1);
      const failed = JSON.parse(lines[0]!);
      assert.equal(failed.line, 43);
      assert.equal(failed.errors[0].field, 'price');

      // A refused job shows the API's own message beside the button.
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      const refusal = await served.tenant.post('/v1/jobs', { resource: 'deliveries', format: 'csv' });
      assert.equal(refusal.status, 400);
      const message = (refusal.body as any).errors[0].message as string;
      // This file is dropped on the zone rather than chosen.
      const dropped = await page.evaluateHandle(() => {
        const transfer = new DataTransfer();
        transfer.items.add(new File(['code\nD1\n'], 'deliveries.csv', { type: 'text/csv' }));
        return transfer;
      });
      await page.locator('.drop').dispatchEvent('dragover', { dataTransfer: dropped });
      await page.locator('.drop').dispatchEvent('drop', { dataTransfer: dropped });
      await page.getByText('deliveries.csv (8 bytes)').waitFor();
      await page.getByLabel('Resource').selectOption('deliveries');
      await page.getByRole('button', { name: 'Upload' }).click();
      const alert = page.locator('form').getByRole('alert');
      await alert.waitFor();
      assert.ok(
        (await alert.textContent())?.includes(message),
        `${await alert.textContent()} shows "${message}"`,
      );

      // 390 px wide: the same page, nothing to scroll sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('progressbar', { name: 'Rows written' }).first().waitFor();
      await fitsWidth(page);
      await page.getByRole('button', { name: 'Upload' }).waitFor();

      // A session the service no longer accepts returns to sign-in; signing out forgets the token.
      await page.evaluate(() => {
        const session = JSON.parse(sessionStorage.getItem('sfa-console-session')!);
        sessionStorage.setItem('sfa-console-session', JSON.stringify({ ...session, accessToken: 'x.y.z' }));
      });
      await page.reload();
      await page.getByText('The service no longer accepts your session: sign in again.').waitFor();
      await signIn(page, served.url, served.credentials);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Client secret').waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
      watched.clean();
    });
  }
});
