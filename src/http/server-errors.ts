import { ValidationCrash } from '../batch/batch-errors.js';
import { isConnectionError, sqlState } from '../db/failures.js';

/**
 * Classifies an unexpected failure into the spec's 500 messages (backoffice-api.md 7.1). The client
 * gets a short, safe detail and the request id; the full error goes to the log.
 */

export function serverErrorMessage(error: unknown, requestId: string): string {
  const reference = `request id ${requestId}`;
  if (error instanceof ValidationCrash) return `Unexpected validation error: internal error (${reference})`;
  if (isConnectionError(error)) return `Error connecting to database: database unavailable (${reference})`;
  const code = sqlState(error);
  if (code && /^[0-9A-Z]{5}$/.test(code)) return `Database operation failed: SQLSTATE ${code} (${reference})`;
  return `Unexpected error: internal error (${reference})`;
}
