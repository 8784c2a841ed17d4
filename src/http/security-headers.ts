import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/**
 * The policy of every answer but the docs page (which sets its own, src/routes/docs/docs-routes.ts): the API
 * answers JSON, never a page, so nothing it sends may load, run or be framed in a browser.
 */
const API_CSP = {
  defaultSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'none'"],
  frameAncestors: ["'none'"],
};

/**
 * Security headers on every answer (docs/decisions.md, security headers): helmet's set, with framing
 * denied, no Referer sent on, and HSTS without includeSubDomains (the operator's other hosts are
 * not this service's to decide). Every answer is `Cache-Control: no-store` unless its route set its
 * own (Swagger UI's files): /v1 answers carry customers' personal data, /token answers
 * carry tokens, and a new endpoint is covered without remembering to.
 */
export async function installSecurityHeaders(app: FastifyInstance): Promise<void> {
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: { useDefaults: false, directives: API_CSP },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: false },
  });
  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  });
}
