import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database, Transaction } from '../db/database.js';
import { type Answer, answerOnce, type IdempotencySettings } from '../idempotency/answer-once.js';
import { problemOf } from './domain-problems.js';
import { idempotencyKeyOf, requestHash } from './idempotency-key-hook.js';
import type { HttpProblem } from './problems.js';

/** Seven days (extensions.md 8: at least that long). */
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 7 * 24 * 3600;

const JSON_TYPE = 'application/json; charset=utf-8';

/** An error answer as text: what the error handler would send for it, kept byte for byte. */
export function problemAnswer(problem: HttpProblem): Answer {
  return { status: problem.statusCode, body: JSON.stringify(problem.body()) };
}

/**
 * The work of a request refused while `prepare` checked it: a 400 of the domain (an array rule, invalid
 * items) is an answer like any other, kept for a key; any other error is thrown on.
 */
export function refusedWork(error: unknown): () => Promise<Answer> {
  const problem = problemOf(error);
  if (problem?.statusCode !== 400) throw error;
  const answer = problemAnswer(problem);
  return async () => answer;
}

/**
 * Answers a POST that may carry an Idempotency-Key (extensions.md 8). `prepare` checks the request
 * and gives the work that writes and answers. Without a key, that work runs as it always did (tx
 * undefined: it writes on its own). With one, it runs once per key: inside the transaction that keeps
 * its answer, or not at all when the answer is replayed. `body`: the request's bytes, part of what
 * "the same request" means.
 */
export async function answerRequest(
  request: FastifyRequest,
  db: Database,
  settings: IdempotencySettings,
  body: Buffer | undefined,
  prepare: () => Promise<(tx: Transaction | undefined) => Promise<Answer>>,
): Promise<{ answer: Answer; replayed: boolean }> {
  const key = idempotencyKeyOf(request);
  if (key === undefined) return { answer: await (await prepare())(undefined), replayed: false };
  const keyed = {
    tenantId: request.tenantId,
    key,
    requestHash: requestHash(request.method, request.url, body),
  };
  return answerOnce(db, keyed, settings, prepare);
}

/**
 * A POST of the management APIs (webhooks, jobs) answered once per Idempotency-Key: `check` refuses
 * before anything is written (its 400 is an answer like any other, kept for a key), the work it
 * gives writes on the key's transaction, or on its own without a key.
 */
export function answerKeyedPost(
  request: FastifyRequest,
  db: Database,
  settings: IdempotencySettings,
  body: Buffer | undefined,
  check: () => Promise<(q: Database | Transaction) => Promise<Answer>>,
): Promise<{ answer: Answer; replayed: boolean }> {
  const prepare = async () => {
    let work: (q: Database | Transaction) => Promise<Answer>;
    try {
      work = await check();
    } catch (error) {
      return refusedWork(error);
    }
    return (tx: Transaction | undefined) => work(tx ?? db);
  };
  return answerRequest(request, db, settings, body, prepare);
}

/** Sends an answer's exact text; a replay says so (Idempotent-Replayed: true). */
export function sendAnswer(reply: FastifyReply, answer: Answer, replayed: boolean): FastifyReply {
  reply.code(answer.status).type(JSON_TYPE);
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(answer.body);
}
