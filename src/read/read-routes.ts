import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Database } from '../db/database.js';
import { registerAcknowledge } from './acknowledge.js';
import { registerCustomerList } from './customers-list.js';
import { registerPendingDeliveries } from './deliveries-pending.js';
import { FilteredTotals } from './filtered-totals.js';

export interface ReadRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
  /** Totals of filtered lists counted by this app, reused while their version holds. */
  totals: FilteredTotals;
  /** PUBLIC_BASE_URL: where paging links point; absent, the request's well-formed scheme and host. */
  publicBaseUrl?: string | undefined;
}

/** The /v1 endpoints: customer list, pending deliveries, acknowledgement. */
export function registerReadRoutes(app: FastifyInstance, deps: Omit<ReadRouteDeps, 'totals'>): void {
  const withTotals = { ...deps, totals: new FilteredTotals() };
  registerCustomerList(app, withTotals);
  registerPendingDeliveries(app, withTotals);
  registerAcknowledge(app, withTotals);
}
