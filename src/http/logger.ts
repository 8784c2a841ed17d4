import type { FastifyServerOptions } from 'fastify';
import { stdSerializers } from 'pino';

/** Query parameters a careless client might put credentials in; their values never reach a log. */
const SECRET_PARAMETERS = /([?&](?:client_secret|access_token|token|subscription[-_]key|key)=)[^&#]*/gi;

export function withoutSecrets(url: string): string {
  return url.replace(SECRET_PARAMETERS, '$1[redacted]');
}

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
      req(request: { method: string; url: string; id: string }) {
        return { method: request.method, url: withoutSecrets(request.url), id: request.id };
      },
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
