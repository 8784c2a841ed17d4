import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Database } from '../db/database.js';
import { registerAcknowledge } from './acknowledge.js';
import { registerCustomerList } from './customers-list.js';
import { registerPendingDeliveries } from './deliveries-pending.js';

export interface ReadRouteDeps {
  db: Database;
  /** Runs before the body is read; sets request.tenantId or answers 401. */
  authenticate: onRequestHookHandler;
}

/** The /v1 endpoints: customer list, pending deliveries, acknowledgement. */
export function registerReadRoutes(app: FastifyInstance, deps: ReadRouteDeps): void {
  registerCustomerList(app, deps);
  registerPendingDeliveries(app, deps);
  registerAcknowledge(app, deps);
}
