import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import type { TenantClient } from '../../kit/tenant-client.js';
import type { ServedBackend } from '../helpers/served-settings.js';
import { servedTenant } from '../upload/served.js';

/*
 * The console's browser suites (extensions.md 14): the built server (`npm run build` first) started as
 * the command starts it, on a database of its own, with one tenant made by `tenant create`; Debian's
 * Chromium driven by playwright-core. Every request to another origin is refused and recorded, and so
 * is every violation of the page's policy: each suite asserts none.
 */

const CHROMIUM = '/usr/bin/chromium';

export interface Console {
  url: string;
  tenant: TenantClient;
  credentials: { subscriptionKey: string; clientId: string; clientSecret: string };
}

/** A served process on a new database with one tenant; webhooks may reach loopback. */
export async function servedConsole(backend: ServedBackend): Promise<Console> {
  // CONSOLE on whatever the calling shell says.
  const { url, tenant, credentialsJson } = await servedTenant(backend, 'console', {
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    CONSOLE: 'on',
  });
  return { url, tenant, credentials: JSON.parse(credentialsJson) };
}

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    assert.fail(
      `Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium (never a downloaded browser)`,
    );
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  after(() => browser.close());
  return browser;
}

export interface Watched {
  context: BrowserContext;
  page: Page;
  /** Requests to anywhere but the service. */
  elsewhere: string[];
  /** Content-Security-Policy violations and errors thrown in the page. */
  refused: string[];
  /** Asserts that nothing left the origin and nothing was refused by the policy. */
  clean(): void;
}

/** A new page that records what leaves the service's origin and what its policy refuses. */
export async function watchedPage(
  browser: Browser,
  base: string,
  viewport = { width: 1280, height: 900 },
): Promise<Watched> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const elsewhere: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${base}/`) || url.startsWith(`blob:${base}/`)) return route.fallback();
    elsewhere.push(url);
    return route.abort();
  });
  const refused: string[] = [];
  page.on('pageerror', (error) => refused.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
  });
  await page.exposeFunction('recordViolation', (text: string) => refused.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) =>
      (window as any).recordViolation(`${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  return {
    context,
    page,
    elsewhere,
    refused,
    clean() {
      assert.deepEqual(elsewhere, [], 'no request left the service');
      assert.deepEqual(refused, [], 'nothing refused by the console policy, no error in the page');
    },
  };
}

/** Signs in through the form (clicks), and lands on the Overview. */
export async function signIn(page: Page, base: string, credentials: Console['credentials']): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel('Subscription key').fill(credentials.subscriptionKey);
  await page.getByLabel('Client id').fill(credentials.clientId);
  await page.getByLabel('Client secret').fill(credentials.clientSecret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}

/** Presses Tab until `target` has the focus (keyboard only): fails after `limit` presses. */
export async function tabTo(page: Page, target: Locator, limit = 80): Promise<void> {
  for (let presses = 0; presses < limit; presses++) {
    if (await target.evaluate((element) => element === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  assert.fail(`Tab never reached ${target}`);
}

/** Waits until a progress bar's value equals its maximum (and the maximum is `max` when given). */
export async function barAtEnd(bar: Locator, max?: number): Promise<void> {
  await bar.page().waitForFunction(
    ([element, expected]) => {
      const now = element?.getAttribute('aria-valuenow');
      const top = element?.getAttribute('aria-valuemax');
      return (
        now !== null && now !== undefined && now === top && (expected === null || Number(top) === expected)
      );
    },
    [await bar.elementHandle(), max ?? null] as const,
    { timeout: 120_000 },
  );
}

/** The page is no wider than its viewport (nothing to scroll sideways). */
export async function fitsWidth(page: Page): Promise<void> {
  const [scroll, width] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    window.innerWidth,
  ]);
  assert.ok(scroll! <= width!, `the page is ${scroll} px wide in a ${width} px viewport`);
}
