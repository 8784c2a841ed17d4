import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyServerOptions } from 'fastify';
import { type HttpProblem, problems } from './problems.js';

/** What Node's HTTP parser (llhttp) attaches to the errors of a request it refused. */
interface ParserError extends Error {
  code?: string;
  reason?: string;
}

/** llhttp's reason is a fixed text of its own ("Invalid header value char"), never the client's bytes. */
function reasonOf(error: ParserError): string {
  const reason = typeof error.reason === 'string' ? error.reason : '';
  return /^[\x20-\x7e]{1,100}$/.test(reason) ? reason : 'the request could not be parsed';
}

export function clientProblem(error: ParserError): HttpProblem {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return problems.requestTimeout();
  if (error.code === 'HPE_HEADER_OVERFLOW') return problems.headersTooLarge(maxHeaderSize);
  return problems.malformedRequest(reasonOf(error));
}

/**
 * A request Node's HTTP server refuses before Fastify sees it (bytes HTTP does not allow, headers past
 * the size limit, a client too slow) is answered in the spec's error shape, like every other error,
 * instead of Fastify's own body or an empty 431; then the connection is closed, as Node does.
 */
export const clientErrorHandler: NonNullable<FastifyServerOptions['clientErrorHandler']> = (
  error: ParserError,
  socket: Socket,
) => {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const problem = clientProblem(error);
    const body = JSON.stringify(problem.body());
    socket.write(
      `HTTP/1.1 ${problem.statusCode} ${STATUS_CODES[problem.statusCode]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
};
