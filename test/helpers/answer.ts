import type { Answer } from '../../kit/transport.js';

/**
 * The part of an answer most assertions compare whole: its text, headers (request id, date) and
 * time differ from one request to the next, so assert.deepEqual on the whole answer would compare them.
 */
export function statusAndBody(answer: Answer): { status: number; body: any } {
  return { status: answer.status, body: answer.body };
}
