import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { CONSOLE_CSP, CONSOLE_ROOT } from '../../src/http/console-routes.js';
import { testAuthConfig } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

/*
 * GET /console (extensions.md 14) as files: the build's output, its headers and cache rules, deep
 * links, and CONSOLE=off. The browser suites (console-*.test.ts) drive the page itself.
 * `npm run build` must have run (npm ci's prepare does).
 */

/** The console's JS and CSS together, compressed, at most this (the page loads fast on a slow line). */
const MAX_GZIPPED = 150 * 1024;

const [backend] = backends();

describe('the console as files', () => {
  test('the build leaves index.html naming hashed, minified JS and CSS of at most 150 KB gzipped', () => {
    const assets = readdirSync(join(CONSOLE_ROOT, 'assets'));
    const js = assets.filter((name) => /^main-[A-Z0-9]+\.js$/.test(name));
    const css = assets.filter((name) => /^main-[A-Z0-9]+\.css$/.test(name));
    assert.equal(js.length, 1, `${assets}`);
    assert.equal(css.length, 1, `${assets}`);
    const index = readFileSync(join(CONSOLE_ROOT, 'index.html'), 'utf8');
    assert.ok(index.includes(`/console/assets/${js[0]}`));
    assert.ok(index.includes(`/console/assets/${css[0]}`));
    assert.doesNotMatch(index, /<script>|<style|\sstyle=|\son\w+=/i, 'nothing inline');
    const script = readFileSync(join(CONSOLE_ROOT, 'assets', js[0]!));
    assert.ok(script.toString('utf8').split('\n').length < 10, 'minified');
    const gzipped =
      gzipSync(script, { level: 9 }).length +
      gzipSync(readFileSync(join(CONSOLE_ROOT, 'assets', css[0]!)), { level: 9 }).length;
    console.log(`console bundle: ${gzipped} bytes gzipped`);
    assert.ok(gzipped <= MAX_GZIPPED, `${gzipped} bytes gzipped`);
    // Values from the API are rendered as text: no source of the console writes HTML.
    const sources = join(import.meta.dirname, '..', '..', 'console', 'src');
    for (const file of readdirSync(sources, { recursive: true, encoding: 'utf8' })) {
      if (!/\.tsx?$/.test(file)) continue;
      assert.doesNotMatch(
        readFileSync(join(sources, file), 'utf8'),
        /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML/,
        file,
      );
    }
  });

  test('/console and its deep links answer the page, under the console policy; hashed files are cached long', async () => {
    const db = await backend!.db();
    const app = await buildApp({ db, config: testAuthConfig, logLevel: 'silent' });
    after(() => app.close());
    for (const url of [
      '/console',
      '/console/',
      '/console/overview',
      '/console/activity',
      '/console/jobs',
      '/console/jobs/job_x',
      '/console/webhooks',
    ]) {
      const page = await app.inject({ method: 'GET', url });
      assert.equal(page.statusCode, 200, url);
      assert.match(page.headers['content-type'] as string, /^text\/html/);
      assert.equal(page.headers['content-security-policy'], CONSOLE_CSP, url);
      assert.equal(page.headers['cache-control'], 'no-store', url);
      assert.equal(page.headers['x-frame-options'], 'DENY');
      assert.equal(page.headers['set-cookie'], undefined);
      assert.match(page.body, /<div id="app"><\/div>/);
    }
    assert.match(CONSOLE_CSP, /connect-src 'self'/);
    assert.match(CONSOLE_CSP, /frame-ancestors 'none'/);
    assert.doesNotMatch(CONSOLE_CSP, /unsafe-inline|unsafe-eval/);

    const index = readFileSync(join(CONSOLE_ROOT, 'index.html'), 'utf8');
    for (const [, asset] of index.matchAll(/"(\/console\/assets\/[^"]+)"/g)) {
      const file = await app.inject({ method: 'GET', url: asset! });
      assert.equal(file.statusCode, 200, asset);
      assert.equal(file.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(file.headers['content-security-policy'], CONSOLE_CSP);
      // The build's compressed copies are sent as they are: the browser gets the smaller brotli.
      const compressed = await app.inject({
        method: 'GET',
        url: asset!,
        headers: { 'accept-encoding': 'gzip, deflate, br, zstd' },
      });
      assert.equal(compressed.headers['content-encoding'], 'br', asset);
      assert.deepEqual(compressed.rawPayload, readFileSync(join(CONSOLE_ROOT, `${asset!.slice(9)}.br`)));
      assert.ok(compressed.rawPayload.length < file.rawPayload.length / 2, asset);
      assert.equal(compressed.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(compressed.headers['content-security-policy'], CONSOLE_CSP);
    }
    const missing = await app.inject({ method: 'GET', url: '/console/assets/main-NOSUCH.js' });
    assert.equal(missing.statusCode, 404, 'a missing asset is not the page');
    assert.equal(missing.headers['cache-control'], 'no-store');
    const icon = await app.inject({ method: 'GET', url: '/console/favicon.svg' });
    assert.equal(icon.statusCode, 200);
    // The API's own answers keep the API's policy.
    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.notEqual(health.headers['content-security-policy'], CONSOLE_CSP);
  });

  test('CONSOLE=off removes /console; the API stays; anything but on or off is refused', async () => {
    assert.equal(loadConfig({}).console, true);
    assert.equal(loadConfig({ CONSOLE: 'on' }).console, true);
    assert.equal(loadConfig({ CONSOLE: 'off' }).console, false);
    assert.throws(() => loadConfig({ CONSOLE: 'no' }), /^ConfigError: CONSOLE must be on or off, got "no"/);
    const db = await backend!.db();
    const app = await buildApp({ db, config: { ...testAuthConfig, console: false }, logLevel: 'silent' });
    after(() => app.close());
    for (const url of ['/console', '/console/jobs', '/console/favicon.svg']) {
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, 404, url);
    }
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/docs' })).statusCode, 200);
  });
});
