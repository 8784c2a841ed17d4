/**
 * Which database failures mean "no usable database behind this connection", as opposed to a statement
 * that failed on a healthy one. The pool ends such connections instead of reusing them, and the HTTP
 * layer answers them with the spec's "Error connecting to database".
 */

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
  // read_only_sql_transaction: the server no longer accepts writes (a standby after a switchover, or a
  // primary made read-only): the connection must go, so that the pool reconnects to the new primary.
  '25006',
]);
const CONNECTION_MESSAGES = new RegExp(
  [
    'timeout exceeded when trying to connect',
    'Connection terminated',
    'not queryable',
    'PGlite is closed',
    'Client was closed',
    'Cannot use a pool after calling end',
    // pg's client-side query_timeout: the statement may still run; the connection cannot be reused.
    'Query read timeout',
    // 0A000 from a standby asked for the UNLOGGED rate_limits table: the same wrong-server case as 25006.
    'during recovery',
  ].join('|'),
  'i',
);

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isConnectionError(error: unknown): boolean {
  const code = sqlState(error);
  if (code && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}
