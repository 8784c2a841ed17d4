/**
 * Runs in a worker thread (src/body-threads/batch-worker-pool.ts): the CPU-heavy part of a large batch body,
 * off the event loop that serves every tenant's requests. Parses the bytes, applies the array rules,
 * validates the items, merges repeated keys and builds the statements' column literals, and sends back
 * only small results: an array rule's name, the capped problem list, or the literals and counts. Never
 * the parsed items or rows: cloning them into the main thread costs it about what their parse did.
 */

import { type ArrayRule, BatchArrayRefused, type ItemError } from '../batch/batch-errors.js';
import { NO_OPTIONS } from '../batch/batch-options.js';
import { type CheckedBatch, checkBatch } from '../batch/check-block.js';
import type { PreparedWrite } from '../batch/prepared-write.js';
import { type AcknowledgeCheck, checkAcknowledgeBytes } from '../deliveries/acknowledge.js';
import { checkRejectBytes, type RejectCheck } from '../deliveries/rejections.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { batchResources } from '../resources/index.js';

export interface BatchTask {
  /** The resource's name (resource.name). */
  resource: string;
  /** The body's bytes (moved, not copied, when they own their memory). */
  body: Uint8Array;
  /** db.statementRows: the rows of one statement. */
  statementRows: number;
  /** on_invalid=skip: every item checked, the valid ones written. */
  skipInvalid?: boolean;
  /** outcomes=true: each valid item's key as sent comes back (small strings, not the rows). */
  outcomes?: boolean;
}

export type BatchTaskResult =
  | { kind: 'array'; rule: ArrayRule }
  | {
      kind: 'checked';
      /** The array's length. */
      items: number;
      /** Sorted by index, capped (src/batch/batch-errors.ts); empty for a valid batch. */
      errors: ItemError[];
      /** Per item, the key its row refers to (CheckedBatch.referencedKeys); empty without a reference. */
      referencedKeys: (string | undefined)[];
      /** With skipInvalid: 1 for each invalid item. */
      invalid?: Uint8Array;
      /** With outcomes: per valid item, its key fields as sent (JSON text). */
      keyTexts?: (string | undefined)[];
      /** Present when there is something to write. */
      write?: PreparedWrite;
    };

const byName = new Map<string, BatchResource>(batchResources.map((resource) => [resource.name, resource]));

export default async function checkBatchBody(task: BatchTask): Promise<BatchTaskResult> {
  const resource = byName.get(task.resource);
  if (!resource) throw new Error(`no batch resource ${task.resource}`);
  const options = { ...NO_OPTIONS, skipInvalid: task.skipInvalid === true, outcomes: task.outcomes === true };
  let checked: CheckedBatch;
  try {
    // The same check as on the event loop, in one piece: this thread serves no requests.
    checked = await checkBatch(resource, task.body, task.statementRows, options, false);
  } catch (error) {
    if (error instanceof BatchArrayRefused) return { kind: 'array', rule: error.rule };
    throw error;
  }
  // Field by field: what crosses to the main thread must be cloneable (no functions).
  const { items, errors, invalid, keyTexts, write, referencedKeys } = checked;
  return { kind: 'checked', items, errors, invalid, keyTexts, write, referencedKeys };
}

/** A large acknowledgement body (POST /v1/deliveries/acknowledge): parse and check; the codes back. */
export function checkAcknowledgeBody(task: { body: Uint8Array }): AcknowledgeCheck {
  return checkAcknowledgeBytes(Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength));
}

/** A large rejection body (POST /v1/deliveries/reject): parse and check; the codes and reasons back. */
export function checkRejectBody(task: { body: Uint8Array }): RejectCheck {
  return checkRejectBytes(Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength));
}
