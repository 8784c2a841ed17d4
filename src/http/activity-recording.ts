import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Database, Queryable } from '../db/database.js';
import type { Answer } from '../idempotency/answer-once.js';
import { batchResources } from '../resources/index.js';
import { type ActivityRecord, recordActivity, type WriteActivity } from '../sql/activity.js';
import { idempotencyKeyOf } from './idempotency-key-hook.js';

/*
 * Every write request of an authenticated tenant is recorded for GET /v1/activity (extensions.md 14;
 * docs/decisions/0148-activity-and-overview.md). A request that writes through answerRequest
 * (src/http/keyed-reply.ts) records its row in its own transaction, with its write: what committed
 * always has its row, what rolled back has none. Every other write request (refused, replayed, or a
 * route that writes otherwise) records its row in the onSend hook here, before its answer leaves.
 * An answer that says to come back (Retry-After: rate limit, no place, database out of reach, a key
 * in progress) is not recorded: the request did nothing, and recording it would spend the database
 * work that answer exists to spare.
 */

/** Problems of a refused request kept with its row: as many as a page shows at a glance. */
export const PROBLEMS_KEPT = 5;

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What a route tells about its request beyond what the answer says: a written batch's counts. */
export interface ActivityNote {
  items?: number | undefined;
  created?: number | undefined;
  updated?: number | undefined;
  ignored?: number | undefined;
}

interface RequestActivity extends ActivityNote {
  /** Recorded in the request's own transaction, which committed. */
  recorded: boolean;
}

const activities = new WeakMap<FastifyRequest, RequestActivity>();

function activityOf(request: FastifyRequest): RequestActivity {
  let activity = activities.get(request);
  if (!activity) {
    activity = { recorded: false };
    activities.set(request, activity);
  }
  return activity;
}

/** Adds what the route knows (a written batch's counts) to the request's row. */
export function noteActivity(request: FastifyRequest, note: ActivityNote): void {
  Object.assign(activityOf(request), note);
}

/** A write request of an authenticated tenant: what the activity records. */
export function isRecordedWrite(request: FastifyRequest): boolean {
  return request.tenantId !== 0 && WRITE_METHODS.has(request.method);
}

/** Each batch endpoint's resource, by its route. */
const BATCH_RESOURCES = new Map(batchResources.map((resource) => [resource.path, resource.name]));

/** The resource a route names: a batch endpoint's (its declaration), or the family of a /v1 write. */
function resourceOfRoute(routeUrl: string | undefined): string | undefined {
  if (!routeUrl) return undefined;
  return BATCH_RESOURCES.get(routeUrl) ?? /^\/v1\/(deliveries|webhooks|jobs)(?:\/|$)/.exec(routeUrl)?.[1];
}

/** The first problems of an error answer's body (its `errors`), as JSON text; undefined otherwise. */
function firstProblems(status: number, body: unknown): string | undefined {
  if (status < 400 || typeof body !== 'string' || body.length === 0 || body[0] !== '{') return undefined;
  try {
    const parsed = JSON.parse(body) as { errors?: unknown };
    return Array.isArray(parsed.errors) ? JSON.stringify(parsed.errors.slice(0, PROBLEMS_KEPT)) : undefined;
  } catch {
    return undefined;
  }
}

function pathOf(request: FastifyRequest): string {
  const query = request.url.indexOf('?');
  return query === -1 ? request.url : request.url.slice(0, query);
}

function recordOf(
  request: FastifyRequest,
  status: number,
  elapsedMs: number,
  replayed: boolean,
  problems: string | undefined,
): ActivityRecord {
  const activity = activityOf(request);
  let key: string | undefined;
  try {
    key = idempotencyKeyOf(request);
  } catch {
    // A malformed key was refused; the answer's problems say so, the row keeps no key.
  }
  return {
    tenantId: request.tenantId,
    method: request.method,
    path: pathOf(request),
    resource: resourceOfRoute(request.routeOptions.url),
    status,
    durationMs: Math.round(elapsedMs),
    items: activity.items,
    created: activity.created,
    updated: activity.updated,
    ignored: activity.ignored,
    idempotencyKey: key,
    replayed,
    requestId: request.id,
    problems,
  };
}

/**
 * Records a request that wrote, inside its transaction, once its answer is known. Marked recorded
 * only once the transaction committed (markCommitted): one that rolls back is recorded by the hook.
 */
export async function recordInTransaction(
  request: FastifyRequest,
  tx: Queryable,
  answer: Answer,
  elapsedMs: number,
): Promise<void> {
  if (!isRecordedWrite(request)) return;
  await recordActivity(
    tx,
    recordOf(request, answer.status, elapsedMs, false, firstProblems(answer.status, answer.body)),
  );
}

/**
 * The row of a request that writes without a key, as it stands now (status: the answer it gives once
 * written), for its write to record (WriteTarget.activity, src/batch/write-block.ts); undefined for a
 * request the activity does not record. Once the write recorded it, markRecorded.
 */
export function activityOfWrite(
  request: FastifyRequest,
  status: number,
  elapsedMs: () => number,
): (() => WriteActivity) | undefined {
  if (!isRecordedWrite(request)) return undefined;
  return () => recordOf(request, status, elapsedMs(), false, undefined);
}

/** The transaction that recorded the request committed: the hook records nothing more. */
export function markRecorded(request: FastifyRequest): void {
  activityOf(request).recorded = true;
}

/**
 * The hook that records every other write request before its answer leaves. A failure to record is
 * logged and never changes the answer.
 */
export function installActivityRecording(app: FastifyInstance, db: Database): void {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload) => {
    if (!isRecordedWrite(request) || activities.get(request)?.recorded) return payload;
    if (reply.hasHeader('retry-after')) return payload;
    const status = reply.statusCode;
    const replayed = reply.getHeader('idempotent-replayed') === 'true';
    try {
      await recordActivity(
        db,
        recordOf(request, status, reply.elapsedTime, replayed, firstProblems(status, payload)),
      );
    } catch (error) {
      request.log.warn({ err: error }, 'write request not recorded in the activity');
    }
    return payload;
  });
}
