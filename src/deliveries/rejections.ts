import type { ArrayRule, ItemError } from '../batch/batch-errors.js';
import { arrayRuleBrokenBy } from '../batch/checked-batch.js';
import { validateItems } from '../batch/validate-items.js';
import type { Queryable } from '../db/database.js';
import { text } from '../fields/field.js';
import { MAX_BODY_LIMIT } from '../resources/batch-resource.js';
import { deliveries, MAX_REJECTION_REASON } from '../resources/deliveries.js';
import { rejectDeliveries, requeueDeliveries } from '../sql/rejections.js';
import { checkJsonBytes, retriedAlone } from './acknowledge.js';

/*
 * Deliveries the ERP cannot take (extensions.md 13): rejected with a reason, they leave the pending
 * list for the rejected one until they are requeued (pending again) or acknowledged.
 */

/** Most deliveries one rejection names. */
export const MAX_REJECTIONS = 1_000;

/**
 * One element of a rejection's body, as a field table: the delivery's own code field, and the reason
 * (the rejection_reason the delivery then shows), so the batch endpoints' validation and messages
 * apply as they are.
 */
export const REJECTION_ITEM = {
  fields: {
    code: deliveries.fields.code!,
    reason: text({
      max: MAX_REJECTION_REASON,
      required: true,
      description: "why the ERP cannot take the delivery, kept as given (the delivery's rejection_reason)",
    }),
  },
} as const;

/** 1,000 elements at their fields' longest JSON (every character escaped), with room: 4 MiB. */
export const REJECT_BODY_LIMIT = Math.min(
  MAX_BODY_LIMIT,
  Math.ceil(
    (MAX_REJECTIONS *
      (64 + Object.values(REJECTION_ITEM.fields).reduce((sum, field) => sum + field.maxJsonBytes, 0))) /
      (1024 * 1024),
  ) *
    1024 *
    1024,
);

/** A rejection's body checked: its codes and reasons, the array rule it breaks, or its invalid elements. */
export type RejectCheck =
  | { kind: 'rejections'; codes: string[]; reasons: string[] }
  | { kind: 'array'; rule: ArrayRule }
  | { kind: 'invalid'; errors: ItemError[] };

/**
 * The body's bytes parsed and checked as a rejection's. Pure, so that a large body can run it in the
 * worker thread (src/body-threads/batch-worker-pool.ts) with the same answer as inline.
 */
export function checkRejectBytes(bytes: Buffer): RejectCheck {
  return checkJsonBytes(bytes, checkRejectValue);
}

/** A parsed rejection body checked: the array rules (1 to 1,000), then every element's fields. */
export function checkRejectValue(body: unknown): RejectCheck {
  const rule = arrayRuleBrokenBy(body, MAX_REJECTIONS);
  if (rule) return { kind: 'array', rule };
  const { rows, errors } = validateItems(REJECTION_ITEM, body as unknown[]);
  if (errors.length > 0) return { kind: 'invalid', errors };
  return {
    kind: 'rejections',
    codes: rows.map((row) => row![0] as string),
    reasons: rows.map((row) => row![1] as string),
  };
}

export interface Rejection {
  /** Distinct given codes rejected now (pending before, or rejected before with a new reason). */
  rejected: number;
  /** The other given codes, distinct, in "C" order: no delivery, or an acknowledged one. */
  notFound: string[];
}

/** Rejects the tenant's deliveries of these codes, each with its reason (codes[i], reasons[i]). */
export async function reject(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
  reasons: readonly string[],
  inTransaction = false,
): Promise<Rejection> {
  const distinct = new Set(codes).size;
  const notFound = await retriedAlone(() => rejectDeliveries(db, tenantId, codes, reasons), inTransaction);
  return { rejected: distinct - notFound.length, notFound };
}

export interface Requeue {
  /** Distinct given codes that were rejected and are pending again. */
  requeued: number;
  /** The other given codes, distinct, in "C" order: no rejected delivery. */
  notFound: string[];
}

/** Puts the tenant's rejected deliveries of these codes back in the pending list. */
export async function requeue(
  db: Queryable,
  tenantId: number,
  codes: readonly string[],
  inTransaction = false,
): Promise<Requeue> {
  const distinct = [...new Set(codes)];
  const notFound = await retriedAlone(() => requeueDeliveries(db, tenantId, distinct), inTransaction);
  return { requeued: distinct.length - notFound.length, notFound };
}
