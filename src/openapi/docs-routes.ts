import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { openApiJson } from './document.js';

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
      theme: { title: 'sfa-backoffice API reference' },
      uiConfig: {
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
