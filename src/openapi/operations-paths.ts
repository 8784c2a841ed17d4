import { DATABASE_RETRY_AFTER_SECONDS } from '../http/problems.js';
import { operationsRoutes } from '../routes/operations-schemas.js';
import { VERSION } from '../version.js';
import type { OpenApiObject } from './json-schema.js';
import { declaredPaths } from './route-operations.js';
import { noSecurity } from './security.js';

const status = (value: string) => ({
  'application/json': {
    schema: {
      type: 'object',
      required: ['status'],
      properties: { status: { const: value } },
    },
    example: { status: value },
  },
});

/** GET /health and GET /ready (extensions.md 7): no credentials. */
export const operationsPaths: Record<string, OpenApiObject> = declaredPaths(Object.values(operationsRoutes), {
  health: {
    security: noSecurity,
    responses: {
      '200': {
        description: 'Up, with the version of the running service.',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['status', 'version'],
              properties: { status: { const: 'ok' }, version: { type: 'string' } },
            },
            example: { status: 'ok', version: VERSION },
          },
        },
      },
    },
  },
  ready: {
    security: noSecurity,
    responses: {
      '200': { description: 'Ready to serve.', content: status('ready') },
      '503': {
        description: 'The database does not answer, or takes no writes (a failover).',
        headers: {
          'Retry-After': {
            description: `Seconds to wait before asking again (${DATABASE_RETRY_AFTER_SECONDS})`,
            schema: { type: 'integer' },
          },
        },
        content: status('unavailable'),
      },
    },
  },
});
