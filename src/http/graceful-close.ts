import type { FastifyInstance } from 'fastify';
import { HttpProblem } from './problems.js';

/**
 * Shutdown without waiting on idle clients. fastify.close() stops accepting, reaps
 * the keep-alive connections idle at that moment, and waits for the rest: a connection whose request
 * was in flight would then stay open after its answer until the client or the keep-alive timeout
 * (72 s) ends it, and the process would not exit. So once closing, every answer, including the
 * in-flight ones, carries `Connection: close`; and a request that still arrives on an open
 * connection gets a 503 in the spec's error shape rather than Fastify's own body.
 * The app is built with return503OnClosing: false, so that this hook answers instead.
 */
export function installGracefulClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    // Another instance can answer at once: Retry-After says so (docs/decisions/0143-come-back-answers.md).
    if (closing) {
      done(
        new HttpProblem(503, [{ message: 'The service is shutting down; retry the request' }], {
          'retry-after': '1',
        }),
      );
    } else done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
