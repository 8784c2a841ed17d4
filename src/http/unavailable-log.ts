import type { FastifyBaseLogger } from 'fastify';
import { sqlState } from '../db/failures.js';

/**
 * A database out of reach is a condition the operator already sees on /ready and in the pool's own
 * errors, not a bug in the request: one warn line per answer with its reason and code, no stack. A
 * failover otherwise wrote an error and a stack trace for every request it turned away.
 */
export function logDatabaseUnavailable(log: FastifyBaseLogger, error: unknown): void {
  log.warn(
    { code: sqlState(error), reason: (error as Error).message },
    'database unavailable: answered to come back',
  );
}
