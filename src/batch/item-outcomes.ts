import type { CheckedBatch } from './checked.js';
import type { PreparedWrite } from './prepared-write.js';

/**
 * The `items` of outcomes=true (extensions.md 9) as JSON text: one element per written item, in array
 * order. The occurrence of a key that was applied (the first for insert-if-absent, the last for
 * upserts) has its row's outcome: created when the statement inserted it, else updated (upsert) or
 * ignored (the key existed); every other occurrence is ignored, with duplicateOf. Items left out
 * (on_invalid=skip) are not listed: they are in `errors`.
 */
export function itemOutcomesText(
  checked: CheckedBatch,
  prepared: PreparedWrite,
  inserted: readonly number[],
  upsert: boolean,
  unknown: Uint8Array | undefined,
): string {
  const keyTexts = checked.keyTexts ?? [];
  const isNew = new Uint8Array(prepared.distinct);
  for (const d of inserted) isNew[d] = 1;
  const outcome = new Array<string | undefined>(checked.items);
  const existing = upsert ? 'updated' : 'ignored';
  for (let d = 0; d < prepared.distinct; d++) {
    const item = prepared.rowItems?.[d] ?? d;
    if (!unknown?.[item]) outcome[item] = isNew[d] ? 'created' : existing;
  }
  const duplicateOf = prepared.duplicateOf;
  const parts: string[] = [];
  for (let index = 0; index < checked.items; index++) {
    const key = keyTexts[index];
    if (outcome[index] !== undefined) {
      parts.push(`{"index":${index},"key":${key},"outcome":"${outcome[index]}"}`);
    } else if (duplicateOf && duplicateOf[index]! >= 0 && !unknown?.[index]) {
      parts.push(`{"index":${index},"key":${key},"outcome":"ignored","duplicateOf":${duplicateOf[index]}}`);
    }
  }
  return `[${parts.join(',')}]`;
}
