import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The policy of every answer but the docs page (which sets its own, src/openapi/docs-routes.ts): the API
 * answers JSON, never a page, so nothing it sends may load, run or be framed in a browser.
 */
const API_CSP = {
  defaultSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};

/**
 * helmet's set, with framing denied, no Referer sent on, and HSTS without includeSubDomains (the
 * operator's other hosts are not this service's to decide).
 */
const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: API_CSP },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: false },
};

/**
 * The headers helmet sets for these options, read once by running its middleware against a response
 * that only records them. The options hold no function of the request (no nonces), so the set is the
 * same for every answer: @fastify/helmet built helmet's middlewares again, and parsed the policy
 * again, on every request (about a twentieth of the server's CPU for a one-item batch).
 */
export function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader(name: string, value: unknown) {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  // helmet 8.1 and later throw a bad option rather than pass it to next.
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {});
  return headers;
}

/**
 * Security headers on every answer (docs/decisions/0029-security-headers.md), set before the route runs,
 * so a route may set its own (the docs page's policy). Every answer is `Cache-Control: no-store`
 * unless its route set its own (Swagger UI's files): /v1 answers carry customers' personal data,
 * /token answers carry tokens, and a new endpoint is covered without remembering to.
 */
export function installSecurityHeaders(app: FastifyInstance): void {
  const headers = helmetHeaders(HELMET_OPTIONS);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });
}
