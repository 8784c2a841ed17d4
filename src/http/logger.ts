import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import { type DestinationStream, stdSerializers } from 'pino';
import { UNMATCHED_ROUTE } from './metrics.js';

/**
 * Query parameter names a careless client might put credentials under, after normalising (below):
 * the exact names, and any name containing one of the fragments.
 */
const SECRET_NAMES = new Set(['key', 'auth', 'pwd', 'passwd', 'pass', 'sig', 'signature', 'code', 'jwt']);
const SECRET_FRAGMENTS =
  /secret|token|password|passphrase|apikey|subscriptionkey|authori[sz]ation|credential|bearer|assertion|privatekey|accesskey|sessionkey|cookie/;

/**
 * A parameter name as a server might read it: `+` as a space, percent-decoded (up to three times,
 * for names encoded twice or more), case-folded (NFKC then lower case), with every separator or other
 * non-alphanumeric character dropped: `client%5Fsecret`, `Client-Secret`, `clientSecret` and
 * `client.secret` all become `clientsecret`.
 */
export function normalisedParameterName(raw: string): string {
  let name = raw.replace(/\+/g, ' ');
  for (let round = 0; round < 3 && name.includes('%'); round++) {
    // Valid escapes only: a stray `%` stays as it is rather than failing the whole name.
    name = name.replace(/(?:%[0-9A-Fa-f]{2})+/g, (escapes) => {
      try {
        return decodeURIComponent(escapes);
      } catch {
        return escapes;
      }
    });
  }
  return name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');
}

function isSecretName(raw: string): boolean {
  const name = normalisedParameterName(raw);
  return SECRET_NAMES.has(name) || SECRET_FRAGMENTS.test(name);
}

/**
 * The URL of a request as it may be logged: the value of every query parameter whose name could hold
 * a credential is replaced by [redacted]. Parameters are split on `&` and `;` (some servers read `;`
 * as a separator too), and a `#` does not end the query (a server may read it as part of a value), so
 * a secret cannot hide behind any of them.
 */
export function withoutSecrets(url: string): string {
  const question = url.indexOf('?');
  if (question < 0) return url;
  const redacted = url.slice(question + 1).replace(/[^&;]+/g, (parameter) => {
    const equals = parameter.indexOf('=');
    if (equals < 0) return parameter;
    return isSecretName(parameter.slice(0, equals))
      ? `${parameter.slice(0, equals + 1)}[redacted]`
      : parameter;
  });
  return `${url.slice(0, question + 1)}${redacted}`;
}

/** A caller's X-Request-Id is kept when it is 1 to 128 visible ASCII characters; anything else is replaced. */
const CALLER_REQUEST_ID = /^[!-~]{1,128}$/;

/**
 * The request id (Fastify's genReqId): the caller's X-Request-Id when well formed, so one id follows a
 * request across systems, else a new UUID. It is echoed in the X-Request-Id response header, is on every
 * log line of the request (reqId) and in 500 answers.
 */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && CALLER_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Fastify's request log lines, with a "request completed" line that says what an operator filters on:
 * route pattern (not the raw URL, which the "incoming request" line has, secrets redacted), method,
 * status, duration in milliseconds and the tenant (its id, once the guard has identified it).
 */
export class RequestLogController extends LogController {
  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return;
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? UNMATCHED_ROUTE,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      tenant: request.tenantId || undefined,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Structured JSON logs. Credentials never reach them: the auth headers are redacted, bodies are not
 * logged, and database errors lose the statement text and parameters they carry (PGlite attaches both).
 */
export function loggerOptions(level: string, stream?: DestinationStream): FastifyServerOptions['logger'] {
  return {
    level,
    // Where the lines go: stdout unless a stream is given (tests read the log this way).
    ...(stream ? { stream } : {}),
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
