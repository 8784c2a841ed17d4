import type { FastifyError, FastifyInstance } from 'fastify';
import { isConnectionError } from '../db/failures.js';
import { problemOf } from './domain-problems.js';
import { HttpProblem, problems } from './problems.js';
import { serverErrorMessage } from './server-errors.js';
import { logDatabaseUnavailable } from './unavailable-log.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** One of the contract's batch endpoints: a database out of reach is its 500 (backoffice-api.md 7.1). */
    contractBatch?: boolean;
  }
}

/** Fastify's own client errors, mapped to the service's error bodies. */
function fromFastify(error: FastifyError, bodyLimit: number | undefined): HttpProblem | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problems.bodyTooLarge(bodyLimit ?? 0);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problems.unsupportedMediaType();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problems.invalidJson();
    default:
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return problems.clientError(error.statusCode, error.message);
      }
      return undefined;
  }
}

/**
 * The one place errors become answers: the catalogue's own, the domain's refusals (problemOf) and
 * Fastify's client errors keep their status; everything else is a 500 with the spec's message and a
 * safe detail, logged in full with the request id, except a database out of reach: that says to come
 * back, with Retry-After (docs/decisions/0143-come-back-answers.md).
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem =
      error instanceof HttpProblem
        ? error
        : (problemOf(error) ?? fromFastify(error, request.routeOptions.bodyLimit));
    if (problem) {
      return reply.code(problem.statusCode).headers(problem.headers).send(problem.body());
    }
    const message = serverErrorMessage(error, request.id);
    if (isConnectionError(error)) logDatabaseUnavailable(request.log, error);
    else request.log.error({ err: error }, 'request failed');
    const answer = isConnectionError(error)
      ? problems.databaseUnavailable(message, request.routeOptions.config.contractBatch ? 500 : 503)
      : problems.server(message);
    return reply.code(answer.statusCode).headers(answer.headers).send(answer.body());
  });
  app.setNotFoundHandler((request, reply) => {
    const problem = problems.notFound(request.method, request.url);
    return reply.code(404).send(problem.body());
  });
}
