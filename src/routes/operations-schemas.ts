import type { RouteDeclaration } from '../http/route-schema.js';

/** GET /health and GET /ready (extensions.md 7), declared once: the routes and their document. */

const tags = ['Operations'];

export const operationsRoutes = {
  health: {
    method: 'GET',
    url: '/health',
    schema: { operationId: 'health', tags, summary: 'The process is up' },
  },
  ready: {
    method: 'GET',
    url: '/ready',
    schema: { operationId: 'ready', tags, summary: 'The database is reachable' },
  },
} as const satisfies Record<string, RouteDeclaration>;
