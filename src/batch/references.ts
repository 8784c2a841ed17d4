import type { Queryable } from '../db/database.js';
import type { FieldValue } from '../fields/field.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { missingReferences } from '../sql/missing-references.js';
import { type FieldError, type ItemError, itemCut } from './batch-errors.js';
import type { CheckedBatch } from './checked.js';
import type { ValidatedBatch } from './validate-items.js';

/*
 * The reference rule of a batch (a stock names a product of the tenant's master: BatchResource.
 * reference), in one place. The write statement refuses a row naming a missing key itself
 * (src/sql/batch-write.ts); these name them for the answer: which keys the valid rows refer to that
 * do not exist, and the problem added to each item naming one.
 */

/**
 * Keys found to exist that a bulk job's check remembers, at most: a price list's products, a stock
 * file's locations are a few thousand, asked for again in every block without it.
 */
const MAX_KNOWN_REFERENCES = 100_000;

/**
 * The keys the batch's valid rows refer to that the tenant has no row of: one query, or none.
 * `known`: keys an earlier block of the same job found, not asked for again, and the keys this query
 * finds added to it. Rows are never removed through the API, so a key found stays found; the write
 * statement refuses a missing one whatever the check found (SFA01).
 */
export async function unknownReferences(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  batch: ValidatedBatch,
  known?: Set<string>,
): Promise<Set<string>> {
  return unknownKeys(q, tenantId, resource, referredBy(resource, batch), known);
}

/** What unknownReferences does, of the keys the rows refer to (undefined: a row that names none). */
export async function unknownKeys(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  referred: readonly (string | undefined)[],
  known?: Set<string>,
): Promise<Set<string>> {
  const keys = distinctKeys(referred, known);
  if (keys.length === 0 || !resource.reference) return new Set<string>();
  const missing = await missingReferences(q, resource.reference, tenantId, keys);
  if (known) {
    for (const key of keys) {
      if (known.size >= MAX_KNOWN_REFERENCES) break;
      if (!missing.has(key)) known.add(key);
    }
  }
  return missing;
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
  const at = resource.reference?.position;
  if (at === undefined || missing.size === 0) return;
  const byIndex = new Map(batch.errors.map((error) => [error.index, error]));
  batch.rows.forEach((row, index) => {
    const key = row?.[at];
    if (key === undefined || !missing.has(key as string)) return;
    const existing = byIndex.get(index);
    if (existing) referenceFailure(resource, existing.errors);
    else batch.errors.push({ index, errors: referenceFailure(resource, undefined) });
  });
  batch.errors.sort((a, b) => a.index - b.index);
}

/**
 * A row's problems once the key it names is found missing: the reference's problem alone for a row
 * that was valid, or after the row's own (unless its list was cut: src/batch/batch-errors.ts).
 */
export function referenceFailure(resource: BatchResource, errors: FieldError[] | undefined): FieldError[] {
  const reference = resource.reference!;
  const problem: FieldError = { field: reference.name, message: reference.message };
  if (!errors) return [problem];
  if (errors.at(-1) !== itemCut) errors.push(problem);
  return errors;
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
  known?: Set<string>,
): Promise<Set<string>> {
  const missing = await unknownReferences(q, tenantId, resource, batch, known);
  markUnknownReferences(resource, batch, missing);
  return missing;
}

/** A checked batch's rows as far as the missing-references query reads them (the referring key only). */
export function referenceRows(resource: BatchResource, checked: CheckedBatch): ValidatedBatch['rows'] {
  const at = resource.reference?.position;
  if (at === undefined) return new Array(checked.items).fill(undefined);
  return checked.referencedKeys.map((key) => {
    if (key === undefined) return undefined;
    const row: FieldValue[] = [];
    row[at] = key;
    return row;
  });
}

/** What on_invalid=skip leaves out for unknown references (skippedReferences). */
export interface SkippedReferences {
  /** Per item, 1 when its reference is unknown. */
  unknown: Uint8Array;
  /** How many items that is. */
  count: number;
  /** The rejected items' problems, the unknown references' added. */
  errors: ItemError[];
  /** The unknown keys: the statement leaves out the rows naming one. */
  keys: string[];
}

/**
 * on_invalid=skip with a reference: the valid items whose reference is unknown (one query), rejected
 * and left out of the statement; undefined when there is none. When they and the `invalidItems` are
 * every item, the batch is refused as without on_invalid: `refused` holds its problems.
 */
export async function skippedReferences(
  q: Queryable,
  tenantId: number,
  resource: BatchResource,
  checked: CheckedBatch,
  invalidItems: number,
): Promise<SkippedReferences | { refused: ItemError[] } | undefined> {
  const rows = referenceRows(resource, checked);
  const valid = { rows: rows.map((row, at) => (checked.invalid![at] ? undefined : row)), errors: [] };
  const missing = await unknownReferences(q, tenantId, resource, valid);
  if (missing.size === 0 || !resource.reference) return undefined;
  const at = resource.reference.position;
  const unknown = new Uint8Array(rows.length);
  valid.rows.forEach((row, index) => {
    if (row && missing.has(row[at] as string)) unknown[index] = 1;
  });
  const count = unknown.reduce((sum, flag) => sum + flag, 0);
  // Every element invalid: the usual 400, as without on_invalid.
  if (invalidItems + count === checked.items) {
    const batch = { rows, errors: checked.errors };
    await refuseUnknownReferences(q, tenantId, resource, batch);
    return { refused: batch.errors };
  }
  const marked: ValidatedBatch = { rows: valid.rows, errors: [...checked.errors] };
  markUnknownReferences(resource, marked, missing);
  return { unknown, count, errors: marked.errors, keys: [...missing] };
}

/** Distinct keys the valid rows refer to, those in `known` left out, for the one existence query. */
export function referencedKeys(
  resource: BatchResource,
  batch: ValidatedBatch,
  known?: ReadonlySet<string>,
): string[] {
  return distinctKeys(referredBy(resource, batch), known);
}

/** Per row, the key its reference field names (none without a reference). */
function referredBy(resource: BatchResource, batch: ValidatedBatch): (string | undefined)[] {
  const at = resource.reference?.position;
  return at === undefined ? [] : batch.rows.map((row) => row?.[at] as string | undefined);
}

/** The keys named (undefined: none), each once, those in `known` left out. */
function distinctKeys(referred: readonly (string | undefined)[], known?: ReadonlySet<string>): string[] {
  const keys = new Set<string>();
  for (const key of referred) if (key !== undefined && !known?.has(key)) keys.add(key);
  return [...keys];
}
