/**
 * Classifies an unexpected failure into the spec's 500 messages (backoffice-api.md 7.1). The client
 * gets a short, safe detail and the request id; the full error goes to the log.
 */

/** Thrown when validation itself fails (a bug), as opposed to finding invalid input. */
export class ValidationCrash extends Error {
  constructor(cause: unknown) {
    super('validation failed unexpectedly', { cause });
    this.name = 'ValidationCrash';
  }
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);
const CONNECTION_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|not queryable|PGlite is closed|Client was closed|Cannot use a pool after calling end/i;

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isConnectionError(error: unknown): boolean {
  const code = sqlState(error);
  if (code && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

export function serverErrorMessage(error: unknown, requestId: string): string {
  const reference = `request id ${requestId}`;
  if (error instanceof ValidationCrash) return `Unexpected validation error: internal error (${reference})`;
  if (isConnectionError(error)) return `Error connecting to database: database unavailable (${reference})`;
  const code = sqlState(error);
  if (code && /^[0-9A-Z]{5}$/.test(code)) return `Database operation failed: SQLSTATE ${code} (${reference})`;
  return `Unexpected error: internal error (${reference})`;
}
