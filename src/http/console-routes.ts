import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The console's policy (extensions.md 14, docs/decisions/0149-console-preact.md): its script and style
 * are the service's own files, no inline script or style attribute, requests only to the service
 * itself (the public API), nothing framed and no framing. test/console/ records any violation in a
 * real browser.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Where `npm run build` puts the console (scripts/build-console.mjs), from src/http/ and dist/http/ alike. */
export const CONSOLE_ROOT = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/** The hashed bundle: a new build has new names, so a browser may keep these for a year. */
const ASSETS = '/console/assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * GET /console and its files, served from the build's dist/console: the page and every deep link
 * (/console/jobs/...) answer index.html (never cached: it names the current bundle); the bundle's
 * hashed files are cached long. No credentials needed: the page signs in through /token itself.
 */
export function registerConsole(app: FastifyInstance, root = CONSOLE_ROOT): void {
  app.register(async (scope) => {
    scope.addHook('onRequest', (_request, reply, done) => {
      reply.header('content-security-policy', CONSOLE_CSP);
      done();
    });
    scope.addHook('onSend', (request, reply, payload, done) => {
      if (reply.statusCode === 200 && request.url.startsWith(ASSETS))
        reply.header('cache-control', IMMUTABLE);
      else reply.header('cache-control', 'no-store');
      done(null, payload);
    });
    const built = existsSync(`${root}/index.html`);
    if (built) {
      await scope.register(fastifyStatic, {
        root,
        prefix: '/console/',
        wildcard: false,
        index: false,
        cacheControl: false,
        // The build wrote .br and .gz beside each file, at levels too slow to spend per request.
        preCompressed: true,
      });
    }
    const page = async (request: FastifyRequest, reply: FastifyReply) => {
      if (request.url.startsWith(ASSETS) || !built) {
        return reply
          .code(404)
          .type('text/plain; charset=utf-8')
          .send(built ? 'Not found' : 'The console is not built: run npm run build');
      }
      return reply.type('text/html; charset=utf-8').sendFile('index.html', root);
    };
    scope.get('/console', page);
    scope.get('/console/*', page);
  });
}
