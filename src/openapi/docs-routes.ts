import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { openApiJson } from './document.js';

/**
 * The docs page's policy (docs/decisions/0029-security-headers.md): its scripts, styles and the document
 * come from the service alone (Swagger UI sets styles through the DOM, which style-src does not govern,
 * and its icons are data: images); no inline script or style, no plugin, no framing, forms and requests
 * only to the service itself. test/openapi/docs-page.test.ts records any violation in a real browser.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "object-src 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Swagger UI links the document it loaded under the title: its own copy at /docs/json, which is not the
 * published address; the description links GET /openapi.json instead.
 */
const DOCS_CSS = '.swagger-ui .info hgroup.main > a.link { display: none; }\n';

/** The service's own tab icon instead of the framework's. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f4e79"/>' +
  '<text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="bold" fill="#fff" text-anchor="middle">S</text></svg>';

/**
 * GET /openapi.json, the OpenAPI document; GET /docs, an interactive reference of it (Swagger UI, served
 * from the package: no CDN) where an integrator enters the subscription key and client credentials,
 * gets a token and sends requests. No credentials needed to read either.
 */
export function registerDocs(app: FastifyInstance): void {
  app.get('/openapi.json', async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(openApiJson()),
  );
  // Encapsulated: the swagger decorator and the UI's hooks stay out of the API's scope.
  app.register(async (scope) => {
    await scope.register(fastifySwagger, {
      mode: 'static',
      specification: { document: JSON.parse(openApiJson()) },
    });
    await scope.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      theme: {
        title: 'sfa-backoffice API reference',
        css: [{ filename: 'docs.css', content: DOCS_CSS }],
        favicon: [
          { filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: FAVICON },
        ],
      },
      // No logo: the package would put the framework's in the top bar. Its types do not admit null, but
      // only undefined makes it read its own logo.
      logo: null as unknown as undefined,
      staticCSP: DOCS_CSP,
      uiConfig: {
        // The page without Swagger UI's top bar (its logo and an "Explore" box naming the UI's own copy
        // of the document): the document's title and description head the page.
        layout: 'BaseLayout',
        deepLinking: true,
        docExpansion: 'list',
        displayOperationId: false,
        displayRequestDuration: true,
        filter: true,
        showExtensions: true,
        showCommonExtensions: true,
        tryItOutEnabled: true,
        // Secrets typed into the page are not kept in the browser's storage.
        persistAuthorization: false,
      },
    });
  });
}
