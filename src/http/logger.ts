import type { FastifyServerOptions } from 'fastify';
import { stdSerializers } from 'pino';

/**
 * Structured JSON logs. Credentials never reach them: the auth headers are redacted, bodies are not
 * logged, and database errors lose the statement text and parameters they carry (PGlite attaches both).
 */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["subscription-key"]', 'req.headers.cookie'],
      censor: '[redacted]',
    },
    serializers: {
      err(error: Error) {
        const serialized = stdSerializers.err(error);
        const {
          query: _query,
          params: _params,
          ...safe
        } = serialized as typeof serialized & Record<string, unknown>;
        return safe as typeof serialized;
      },
    },
  };
}
