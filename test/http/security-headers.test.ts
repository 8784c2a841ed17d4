import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import helmet from 'helmet';
import { helmetHeaders } from '../../src/http/security-headers.js';
import { DOCS_CSP } from '../../src/openapi/docs-routes.js';
import { appForNewTenant } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';

/** The headers every answer carries, the docs page's and the API's alike. */
function assertCommonHeaders(response: LightMyRequestResponse, what: string) {
  const h = response.headers;
  assert.equal(h['x-frame-options'], 'DENY', what);
  assert.equal(h['x-content-type-options'], 'nosniff', what);
  assert.equal(h['referrer-policy'], 'no-referrer', what);
  assert.match(String(h['content-security-policy']), /(^|; ?)frame-ancestors 'none'(;|$)/, what);
  assert.equal(h['strict-transport-security'], 'max-age=31536000', what);
  assert.equal(h['x-powered-by'], undefined, what);
}

test('the headers read once are those helmet sets on a real response, for the same options', () => {
  const options = {
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"] } },
    frameguard: { action: 'deny' as const },
    referrerPolicy: { policy: 'no-referrer' as const },
  };
  const response = new ServerResponse(new IncomingMessage(new Socket()));
  response.setHeader('X-Powered-By', 'something');
  let called = false;
  helmet(options)(response.req, response, () => {
    called = true;
  });
  assert.ok(called);
  const expected = Object.fromEntries(Object.entries(response.getHeaders()).map(([k, v]) => [k, String(v)]));
  assert.ok(Object.keys(expected).length >= 10, JSON.stringify(expected));
  assert.deepEqual(helmetHeaders(options), expected);
  // A policy helmet refuses fails the start, not a request.
  assert.throws(
    () => helmetHeaders({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'", 'a;b'] } } }),
    /invalid directive value/,
  );
});

for (const backend of backends()) {
  describe(`security headers on ${backend.name}`, () => {
    test('the docs page has its own policy; the API, the document and errors allow nothing', async () => {
      const { app } = (await appForNewTenant(await backend.db())).transport;
      const docs = await app.inject({ method: 'GET', url: '/docs' });
      assert.equal(docs.statusCode, 200);
      assertCommonHeaders(docs, '/docs');
      assert.equal(docs.headers['content-security-policy'], DOCS_CSP);
      for (const url of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js']) {
        const asset = await app.inject({ method: 'GET', url });
        assert.equal(asset.statusCode, 200, url);
        assertCommonHeaders(asset, url);
      }
      for (const url of ['/openapi.json', '/health', '/ready', '/nowhere']) {
        const answer = await app.inject({ method: 'GET', url });
        assertCommonHeaders(answer, url);
        assert.equal(
          answer.headers['content-security-policy'],
          "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
          url,
        );
      }
    });

    test('every /v1, /api and /token answer is Cache-Control: no-store, successes and errors alike', async () => {
      const { transport, headers } = await appForNewTenant(await backend.db());
      const { app } = transport;
      const json = { ...headers, 'content-type': 'application/json' };
      const requests: [string, InjectOptions][] = [
        ['customers 200', { method: 'GET', url: '/v1/customers', headers }],
        ['customers 400', { method: 'GET', url: '/v1/customers?limit=0', headers }],
        ['customers 401', { method: 'GET', url: '/v1/customers' }],
        ['pending 200', { method: 'GET', url: '/v1/deliveries/pending', headers }],
        [
          'acknowledge 200',
          { method: 'POST', url: '/v1/deliveries/acknowledge', headers: json, payload: '["X"]' },
        ],
        [
          'batch 201',
          {
            method: 'POST',
            url: '/api/products/batch-create',
            headers: json,
            payload: '[{"code":"H1","description":"d"}]',
          },
        ],
        ['batch 400', { method: 'POST', url: '/api/products/batch-create', headers: json, payload: '[{}]' }],
        ['batch 415', { method: 'POST', url: '/api/products/batch-create', headers, payload: '[]' }],
        ['batch 401', { method: 'POST', url: '/api/products/batch-create', payload: [] }],
        ['token 400', { method: 'POST', url: '/token', payload: { grant_type: 'client_credentials' } }],
      ];
      for (const [what, request] of requests) {
        const response = await app.inject(request);
        assert.match(
          what,
          new RegExp(` ${response.statusCode}$`),
          `${what}: got ${response.statusCode} ${response.body}`,
        );
        assert.equal(response.headers['cache-control'], 'no-store', what);
        assertCommonHeaders(response, what);
      }
    });
  });
}
