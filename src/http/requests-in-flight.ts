import type { FastifyInstance } from 'fastify';

/**
 * Whether the app is answering a request now. Background work that can run at two speeds asks it:
 * a bulk job makes its next block ready while one is written only when nothing else is being
 * answered, so that a lone job gets both cores and other tenants' requests, when there are some,
 * find the CPU free (docs/decisions.md, "Bulk jobs: looking ahead only when alone").
 */
export function requestsInFlight(app: FastifyInstance): () => boolean {
  let count = 0;
  app.addHook('onRequest', async (_request, reply) => {
    count++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      count--;
    };
    // 'finish' when the answer was sent, 'close' when the connection went first: one of them always.
    reply.raw.once('finish', end);
    reply.raw.once('close', end);
  });
  return () => count > 0;
}
