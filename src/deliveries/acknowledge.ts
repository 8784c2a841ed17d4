import type { ArrayRule } from '../batch/batch-errors.js';
import { arrayRuleBrokenBy } from '../batch/checked-batch.js';
import { type Database, type Queryable, withRetry } from '../db/database.js';
import type { TextField } from '../fields/field.js';
import { parseJsonBytes } from '../fields/json-text.js';
import { deliveries } from '../resources/deliveries.js';
import { acknowledgeDeliveries } from '../sql/acknowledge.js';

/**
 * POST /v1/deliveries/acknowledge (extensions.md 4): deliveries the ERP received leave the pending
 * list. A write on deliveries that is neither a batch upload nor a read: its own small domain. The
 * requeue (./rejections.ts) takes the same body of codes.
 */

const CODE = deliveries.fields.code!;
/** One message for every way an element can fail the delivery field table's code field. */
export const NOT_A_DELIVERY_CODE = `Item must be a delivery code: a string of 1 to ${(CODE as TextField).max} characters`;
/** 10,000 codes of 30 four-byte characters, quoted, with separators, and room. */
export const ACKNOWLEDGE_BODY_LIMIT = 2 * 1024 * 1024;

/** An element of the body that is not a delivery code, as the invalid-items answer lists it. */
export interface NotACode {
  index: number;
  errors: [{ field: null; message: string }];
}

/** The elements that the code field of the delivery field table refuses, in body order. */
export function notDeliveryCodes(codes: readonly unknown[]): NotACode[] {
  const refused: NotACode[] = [];
  const reasons: string[] = [];
  codes.forEach((code, index) => {
    reasons.length = 0;
    CODE.check(code, reasons);
    if (reasons.length > 0) refused.push({ index, errors: [{ field: null, message: NOT_A_DELIVERY_CODE }] });
  });
  return refused;
}

/** An acknowledgement body checked: its codes, the array rule it breaks, or its elements that are not codes. */
export type AcknowledgeCheck =
  | { kind: 'codes'; codes: string[] }
  | { kind: 'array'; rule: ArrayRule }
  | { kind: 'invalid'; errors: NotACode[] };

/**
 * The body's bytes parsed and checked as the acknowledgement's: the batch array rules, then every
 * element a delivery code. Pure, so that a large body can run it in the worker thread
 * (src/body-threads/batch-worker-pool.ts) with the same answer as inline.
 */
export function checkAcknowledgeBytes(bytes: Buffer): AcknowledgeCheck {
  return checkJsonBytes(bytes, checkAcknowledgeValue);
}

/** Bytes parsed as JSON, then checked by `check`; bytes that are no JSON break the first array rule. */
export function checkJsonBytes<C>(
  bytes: Buffer,
  check: (body: unknown) => C,
): C | { kind: 'array'; rule: 'invalidJson' } {
  let body: unknown;
  try {
    body = parseJsonBytes(bytes);
  } catch {
    return { kind: 'array', rule: 'invalidJson' };
  }
  return check(body);
}

/** A parsed acknowledgement body checked (checkAcknowledgeBytes after the parse). */
export function checkAcknowledgeValue(body: unknown): AcknowledgeCheck {
  const rule = arrayRuleBrokenBy(body);
  if (rule) return { kind: 'array', rule };
  const errors = notDeliveryCodes(body as unknown[]);
  if (errors.length > 0) return { kind: 'invalid', errors };
  return { kind: 'codes', codes: body as string[] };
}

export interface Acknowledgement {
  /** Distinct given codes the tenant has, newly or already acknowledged. */
  acknowledged: number;
  /** The other given codes, distinct, in "C" order. */
  notFound: string[];
}

/**
 * Acknowledges the tenant's deliveries of these codes (each a valid code: notDeliveryCodes found
 * none), on its own (one statement, retried on deadlock) or inside a keyed request's transaction
 * (whose retry covers it). Tell the upkeep afterwards (noteDeliveriesChanged).
 */
export async function acknowledge(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
  inTransaction = false,
): Promise<Acknowledgement> {
  const distinct = [...new Set(codes)];
  const notFound = await retriedAlone(() => acknowledgeDeliveries(db, tenantId, distinct), inTransaction);
  return { acknowledged: distinct.length - notFound.length, notFound };
}

/**
 * Runs one statement of a delivery's state, retried on deadlock when it runs on its own; inside a
 * keyed request's transaction a failed statement ends the transaction, whose own retry covers it.
 */
export function retriedAlone<T>(write: () => Promise<T>, inTransaction: boolean): Promise<T> {
  return inTransaction ? write() : withRetry(write);
}

/** Tells the upkeep about changed deliveries (acknowledged, rejected, requeued), once they committed. */
export async function noteDeliveriesChanged(db: Database, changed: number): Promise<void> {
  // An upper bound (codes acknowledged before count too): enough for the upkeep's threshold.
  await db.wrote('deliveries', changed);
}
