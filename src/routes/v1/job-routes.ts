import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Database, Transaction } from '../../db/database.js';
import { parseJsonBytes } from '../../fields/json-text.js';
import { checkIdempotencyKey } from '../../http/idempotency-key-hook.js';
import { RawJson } from '../../http/json-body.js';
import { answerKeyedPost, sendAnswer } from '../../http/keyed-reply.js';
import { HttpProblem, problems } from '../../http/problems.js';
import { checkedByHandler } from '../../http/route-schema.js';
import type { Answer, IdempotencySettings } from '../../idempotency/answer-once.js';
import { checkJobInput } from '../../jobs/job-input.js';
import { JobRefusal, jobNotFound } from '../../jobs/job-refusal.js';
import {
  cancelJob,
  createJob,
  finishUpload,
  MAX_PARTS,
  presentJob,
  receivePart,
  showJob,
} from '../../jobs/jobs.js';
import { checkQuery } from '../../read/query-params.js';
import { selectResultBlocks } from '../../sql/job-results.js';
import { jobState, selectJobs } from '../../sql/jobs.js';
import {
  jobRoutes as declared,
  JOBS_PATH,
  LIST_QUERY,
  RESULT_OUTCOMES,
  RESULTS_QUERY,
} from './job-schemas.js';

export { JOBS_PATH, RESULT_OUTCOMES };

/** The job's body is a few small fields. */
const BODY_LIMIT = 4 * 1024;
/** Result blocks read per query while streaming the results (each up to 10,000 lines). */
const RESULT_BLOCKS_PER_READ = 4;

export interface JobRouteDeps {
  db: Database;
  authenticate: onRequestHookHandler;
  idempotency: IdempotencySettings;
  /** A job was completed: the background work may take it now rather than at its next round. */
  jobQueued(): void;
}

const json = (status: number, body: unknown): Answer => ({ status, body: JSON.stringify(body) });

/** A job's results of one outcome as NDJSON, read a few blocks at a time as the client takes them. */
async function* resultLines(db: Database, id: string, outcome: string): AsyncGenerator<string> {
  let after = 0;
  for (;;) {
    const blocks = await selectResultBlocks(db, id, outcome, after, RESULT_BLOCKS_PER_READ);
    for (const block of blocks) yield block.body;
    if (blocks.length < RESULT_BLOCKS_PER_READ) return;
    after = blocks.at(-1)!.first_line;
  }
}

/** The bulk jobs' API (extensions.md 12). A tenant sees and changes only its own jobs. */
export function registerJobRoutes(app: FastifyInstance, deps: JobRouteDeps): void {
  const { db } = deps;
  const keyed = {
    bodyLimit: BODY_LIMIT,
    config: { rawJsonFrom: 0 },
    onRequest: [deps.authenticate, checkIdempotencyKey],
    // Checked by the handler against the declarations, inside the Idempotency-Key's work.
    validatorCompiler: checkedByHandler,
  };
  const plain = { onRequest: deps.authenticate, validatorCompiler: checkedByHandler };
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const bytesOf = (request: FastifyRequest) =>
    request.body instanceof RawJson ? request.body.bytes : undefined;

  const answerPost = (
    request: FastifyRequest,
    reply: FastifyReply,
    check: () => Promise<(q: Database | Transaction) => Promise<Answer>>,
  ) => answerKeyedPost(request, reply, db, deps.idempotency, bytesOf(request), check);

  app.post(JOBS_PATH, { ...keyed, schema: declared.create.schema }, async (request, reply) => {
    const { answer, replayed } = await answerPost(request, reply, async () => {
      let body: unknown;
      try {
        body = request.body instanceof RawJson ? parseJsonBytes(request.body.bytes) : request.body;
      } catch {
        throw problems.invalidJson();
      }
      const checked = checkJobInput(body);
      if (!checked.ok) throw new JobRefusal(400, checked.errors);
      return async (q) => json(201, await createJob(q, request.tenantId, checked.value));
    });
    return sendAnswer(reply, answer, replayed);
  });

  app.get(JOBS_PATH, { ...plain, schema: declared.list.schema }, async (request) => {
    const checked = checkQuery(LIST_QUERY, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const rows = await selectJobs(db, request.tenantId, checked.values.limit as number);
    return { data: rows.map(presentJob) };
  });

  app.get(declared.get.url, { ...plain, schema: declared.get.schema }, async (request) =>
    showJob(db, request.tenantId, idOf(request)),
  );

  // A completion's answer is kept for its Idempotency-Key: a retry gets the same 202, not a 409.
  app.post(declared.complete.url, { ...keyed, schema: declared.complete.schema }, async (request, reply) => {
    const { answer, replayed } = await answerPost(request, reply, async () => {
      return async (q) => json(202, await finishUpload(q, request.tenantId, idOf(request)));
    });
    if (answer.status === 202 && !replayed) reply.raw.once('finish', deps.jobQueued);
    return sendAnswer(reply, answer, replayed);
  });

  app.post(declared.abort.url, { ...keyed, schema: declared.abort.schema }, async (request, reply) => {
    const { answer, replayed } = await answerPost(request, reply, async () => {
      return async (q) => json(200, await cancelJob(q, request.tenantId, idOf(request)));
    });
    return sendAnswer(reply, answer, replayed);
  });

  app.get(declared.results.url, { ...plain, schema: declared.results.schema }, async (request, reply) => {
    const checked = checkQuery(RESULTS_QUERY, request.query);
    if (!checked.ok) throw new HttpProblem(400, checked.errors);
    const id = idOf(request);
    if (!(await jobState(db, request.tenantId, id))) throw jobNotFound();
    reply.type('application/x-ndjson; charset=utf-8');
    return reply.send(Readable.from(resultLines(db, id, checked.values.outcome as string)));
  });

  // The parts' bytes are the file, whatever their Content-Type: they reach the route as a stream,
  // stored as they arrive (never held whole), so this route has its own body parsers.
  app.register(async (parts) => {
    parts.removeAllContentTypeParsers();
    parts.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    parts.put(declared.putPart.url, { ...plain, schema: declared.putPart.schema }, async (request) => {
      const given = (request.params as { part: string }).part;
      const part = /^[1-9]\d{0,4}$/.test(given) ? Number(given) : 0;
      if (part < 1 || part > MAX_PARTS) {
        throw new HttpProblem(400, [
          { field: 'part', message: `Must be a whole number from 1 to ${MAX_PARTS}` },
        ]);
      }
      // No body at all (no Content-Type, or Content-Length 0): an empty part.
      const body = (request.body as AsyncIterable<Uint8Array> | undefined) ?? Readable.from([]);
      const declared = request.headers['content-length'];
      return receivePart(
        db,
        request.tenantId,
        idOf(request),
        part,
        body,
        declared === undefined ? undefined : Number(declared),
      );
    });
  });
}
