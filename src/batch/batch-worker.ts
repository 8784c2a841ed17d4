/**
 * Runs in a worker thread (src/batch/batch-worker-pool.ts): the CPU-heavy part of a large batch body,
 * off the event loop that serves every tenant's requests. Parses the bytes, applies the array rules,
 * validates the items, merges repeated keys and builds the statements' column literals, and sends back
 * only small results: an array rule's name, the capped problem list, or the literals and counts. Never
 * the parsed items or rows: cloning them into the main thread costs it about what their parse did.
 */
import type { FieldValue } from '../fields/field.js';
import { parseJsonBytes } from '../http/json-body.js';
import { batchResources } from '../resources/index.js';
import { type ArrayProblem, arrayProblemOf } from './batch-array.js';
import type { BatchResource } from './resource.js';
import { type ItemError, validateItems } from './validate-items.js';
import { type PreparedWrite, prepareWrite } from './write-batch.js';

export interface BatchTask {
  /** The resource's name (resource.name). */
  resource: string;
  /** The body's bytes (moved, not copied, when they own their memory). */
  body: Uint8Array;
  /** db.statementRows: the rows of one statement. */
  statementRows: number;
}

export type BatchTaskResult =
  | { kind: 'array'; problem: ArrayProblem }
  | {
      kind: 'checked';
      /** Sorted by index, capped (src/http/error-limits.ts); empty for a valid batch. */
      errors: ItemError[];
      /** Per item, the product code of its valid row (the missing-products query); empty without one. */
      productCodes: (string | undefined)[];
      /** Present when errors is empty. */
      write?: PreparedWrite;
    };

const byName = new Map<string, BatchResource>(batchResources.map((resource) => [resource.name, resource]));

export default function checkBatchBody(task: BatchTask): BatchTaskResult {
  const resource = byName.get(task.resource);
  if (!resource) throw new Error(`no batch resource ${task.resource}`);
  let body: unknown;
  try {
    body = parseJsonBytes(Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength));
  } catch {
    return { kind: 'array', problem: 'invalidJson' };
  }
  const problem = arrayProblemOf(body);
  if (problem) return { kind: 'array', problem };
  const batch = validateItems(resource, body as unknown[]);
  const at = resource.productPosition;
  const productCodes = at === undefined ? [] : batch.rows.map((row) => row?.[at] as string | undefined);
  if (batch.errors.length > 0) return { kind: 'checked', errors: batch.errors, productCodes };
  const write = prepareWrite(resource, batch.rows as FieldValue[][], task.statementRows);
  return { kind: 'checked', errors: [], productCodes, write };
}
