import type { Queryable } from '../db/database.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { missingReferences } from '../sql/missing-references.js';
import { itemCut } from './batch-errors.js';
import type { ValidatedBatch } from './validate-items.js';

/*
 * The reference rule of a batch (a stock names a product of the tenant's master: BatchResource.
 * reference), in one place. The write statement refuses a row naming a missing key itself
 * (src/sql/batch-write.ts); these name them for the answer: which keys the valid rows refer to that
 * do not exist, and the problem added to each item naming one.
 */

/** The keys the batch's valid rows refer to that the tenant has no row of: one query, or none. */
export async function unknownReferences(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  batch: ValidatedBatch,
): Promise<Set<string>> {
  const keys = referencedKeys(resource, batch);
  if (keys.length === 0 || !resource.reference) return new Set<string>();
  return missingReferences(q, resource.reference, tenantId, keys);
}

/**
 * Adds the reference's problem ("Product does not exist in the product master") to the items whose
 * referring field names a key the other resource lacks (missing: from unknownReferences).
 */
export function markUnknownReferences(
  resource: BatchResource,
  batch: ValidatedBatch,
  missing: ReadonlySet<string>,
): void {
  const reference = resource.reference;
  if (reference === undefined || missing.size === 0) return;
  const { position: at, name, message } = reference;
  const byIndex = new Map(batch.errors.map((error) => [error.index, error]));
  batch.rows.forEach((row, index) => {
    const key = row?.[at];
    if (key === undefined || !missing.has(key as string)) return;
    const error = { field: name, message };
    const existing = byIndex.get(index);
    if (existing?.errors.at(-1) === itemCut) return;
    if (existing) existing.errors.push(error);
    else batch.errors.push({ index, errors: [error] });
  });
  batch.errors.sort((a, b) => a.index - b.index);
}

/**
 * The reference rule applied to a batch: its unknown references found (unknownReferences) and named
 * in its items' problems (markUnknownReferences). Returns those keys.
 */
export async function refuseUnknownReferences(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  batch: ValidatedBatch,
): Promise<Set<string>> {
  const missing = await unknownReferences(q, tenantId, resource, batch);
  markUnknownReferences(resource, batch, missing);
  return missing;
}

/** Distinct keys the valid rows refer to, for the one existence query. */
export function referencedKeys(resource: BatchResource, batch: ValidatedBatch): string[] {
  const at = resource.reference?.position;
  if (at === undefined) return [];
  const keys = new Set<string>();
  for (const row of batch.rows) {
    const key = row?.[at];
    if (key !== undefined) keys.add(key as string);
  }
  return [...keys];
}
