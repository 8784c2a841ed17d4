import type { FastifyInstance } from 'fastify';
import { listResources } from '../resources/lists.js';
import { registerChangesRoute } from './changes-route.js';
import { FilteredTotals } from './filtered-totals.js';
import { type ListRouteDeps, registerListRoute } from './list-route.js';

export type ReadRouteDeps = Omit<ListRouteDeps, 'totals'> & {
  /** The generation of the change feed's cursors (src/sql/feed-positions.ts). */
  feedGeneration: number;
};

/**
 * Every list endpoint (GET /v1/...), one route each from its declaration, sharing one totals cache;
 * and the change feed of every resource (GET /v1/changes).
 */
export function registerReadRoutes(app: FastifyInstance, deps: ReadRouteDeps): void {
  const { feedGeneration: _generation, ...listDeps } = deps;
  const withTotals = { ...listDeps, totals: new FilteredTotals() };
  for (const list of listResources) registerListRoute(app, list, withTotals);
  registerChangesRoute(app, deps);
}
