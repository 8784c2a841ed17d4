import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import { type ArrayRule, BatchArrayRefused } from './batch-errors.js';

/** The array rules every batch body obeys (backoffice-api.md 4.3, 7.1), in the spec's order. */
export function arrayRuleBrokenBy(body: unknown): ArrayRule | undefined {
  if (body === undefined) return 'invalidJson';
  if (!Array.isArray(body)) return 'notAnArray';
  if (body.length === 0) return 'emptyArray';
  if (body.length > MAX_BATCH_ITEMS) return 'tooManyItems';
  return undefined;
}

/** The body as the batch's items; throws BatchArrayRefused with the first array rule it breaks. */
export function checkBatchArray(body: unknown): unknown[] {
  const rule = arrayRuleBrokenBy(body);
  if (rule) throw new BatchArrayRefused(rule);
  return body as unknown[];
}
