import type { FastifyInstance } from 'fastify';

/** The requests the app is answering now. */
export interface RequestsInFlight {
  /** Whether one is being answered. */
  (): boolean;
  /** Calls listener each time the last request in flight ends (the app has nothing left to answer). */
  onQuiet(listener: () => void): void;
}

/**
 * Whether the app is answering a request now: the process hands freed memory back once it has been
 * quiet a while, and not while a job runs either (src/memory-trim.ts, src/server.ts).
 */
export function requestsInFlight(app: FastifyInstance): RequestsInFlight {
  let count = 0;
  const listeners: (() => void)[] = [];
  // Hooks without an await take a callback: an async one costs a promise and two microtasks per request.
  app.addHook('onRequest', (_request, reply, done) => {
    count++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      count--;
      if (count === 0) for (const listener of listeners) listener();
    };
    // 'finish' when the answer was sent, 'close' when the connection went first: one of them always.
    reply.raw.once('finish', end);
    reply.raw.once('close', end);
    done();
  });
  const inFlight = () => count > 0;
  inFlight.onQuiet = (listener: () => void) => {
    listeners.push(listener);
  };
  return inFlight;
}
