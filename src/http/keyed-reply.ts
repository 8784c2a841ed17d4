import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Database, type Transaction, withRetry } from '../db/database.js';
import { type Answer, answerOnce, type IdempotencySettings } from '../idempotency/answer-once.js';
import { isRecordedWrite, markRecorded, recordInTransaction } from './activity-recording.js';
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

/** The works of refusedWork: they write nothing, so they need no transaction of their own. */
const refusals = new WeakSet<object>();

/**
 * The work of a request refused while `prepare` checked it: a 400 of the domain (an array rule, invalid
 * items) is an answer like any other, kept for a key; any other error is thrown on.
 */
export function refusedWork(error: unknown): () => Promise<Answer> {
  const problem = problemOf(error);
  if (problem?.statusCode !== 400) throw error;
  const answer = problemAnswer(problem);
  const work = async () => answer;
  refusals.add(work);
  return work;
}

/**
 * The works that record their request's activity with their own write when they run without a
 * transaction (a batch without a key: its one write statement records it, src/batch/write-block.ts).
 * They are given no transaction of their own: BEGIN, the row and COMMIT were three round trips more
 * per batch (docs/performance.md, "Activity and overview"). A work that ends up not writing (a dry
 * run, a refusal) is recorded by the onSend hook after its answer.
 */
const selfRecording = new WeakSet<object>();

/** Marks a work as one that records its request with its write (selfRecording). */
export function recordedByItsWrite<W extends object>(work: W): W {
  selfRecording.add(work);
  return work;
}

/**
 * Answers a POST that may carry an Idempotency-Key (extensions.md 8). `prepare` checks the request
 * and gives the work that writes and answers. Without a key, that work runs in a transaction of its
 * own (retried whole on deadlock) beside the request's activity row (src/http/activity-recording.ts),
 * unless it records that row with its write itself (recordedByItsWrite).
 * With one, it runs once per key: inside the transaction that keeps its answer and records the
 * activity, or not at all when the answer is replayed. A refusal found by `prepare` writes nothing
 * and opens no transaction (tx undefined). `body`: the request's bytes, part of what "the same
 * request" means.
 */
export async function answerRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  db: Database,
  settings: IdempotencySettings,
  body: Buffer | undefined,
  prepare: () => Promise<(tx: Transaction | undefined) => Promise<Answer>>,
): Promise<{ answer: Answer; replayed: boolean }> {
  const record = (tx: Transaction, answer: Answer) =>
    recordInTransaction(request, tx, answer, reply.elapsedTime);
  const key = idempotencyKeyOf(request);
  if (key === undefined) {
    const work = await prepare();
    if (refusals.has(work) || selfRecording.has(work) || !isRecordedWrite(request))
      return { answer: await work(undefined), replayed: false };
    const answer = await withRetry(() =>
      db.transaction(async (tx) => {
        const answer = await work(tx);
        await record(tx, answer);
        return answer;
      }),
    );
    markRecorded(request);
    return { answer, replayed: false };
  }
  const keyed = {
    tenantId: request.tenantId,
    key,
    requestHash: requestHash(request.method, request.url, body),
  };
  const answered = await answerOnce(db, keyed, settings, prepare, record);
  if (!answered.replayed) markRecorded(request);
  return answered;
}

/**
 * A POST of the management APIs (webhooks, jobs) answered once per Idempotency-Key: `check` refuses
 * before anything is written (its 400 is an answer like any other, kept for a key), the work it
 * gives writes on the key's transaction, or on its own without a key.
 */
export function answerKeyedPost(
  request: FastifyRequest,
  reply: FastifyReply,
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
  return answerRequest(request, reply, db, settings, body, prepare);
}

/** Sends an answer's exact text; a replay says so (Idempotent-Replayed: true). */
export function sendAnswer(reply: FastifyReply, answer: Answer, replayed: boolean): FastifyReply {
  reply.code(answer.status).type(JSON_TYPE);
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(answer.body);
}
