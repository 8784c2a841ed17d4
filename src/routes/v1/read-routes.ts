import type { FastifyInstance } from 'fastify';
import { FilteredTotals } from '../../read/filtered-totals.js';
import { listResources } from '../../resources/lists.js';
import { registerChangesRoute } from './changes-route.js';
import { type ListRouteDeps, registerListRoute } from './list-route.js';

export type ReadRouteDeps = Omit<ListRouteDeps, 'totals'>;

/**
 * Every list endpoint (GET /v1/...), one route each from its declaration, sharing one totals cache;
 * and the change feed of every resource (GET /v1/changes).
 */
export function registerReadRoutes(app: FastifyInstance, deps: ReadRouteDeps): void {
  const withTotals = { ...deps, totals: new FilteredTotals() };
  for (const list of listResources) registerListRoute(app, list, withTotals);
  registerChangesRoute(app, deps);
}
