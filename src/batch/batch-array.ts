import { problems } from '../http/problems.js';
import { MAX_BATCH_ITEMS } from './resource.js';

/** The array rules every batch body obeys (backoffice-api.md 4.3, 7.1), in the spec's order. */
export function checkBatchArray(body: unknown): unknown[] {
  if (body === undefined) throw problems.invalidJson();
  if (!Array.isArray(body)) throw problems.notAnArray();
  if (body.length === 0) throw problems.emptyArray();
  if (body.length > MAX_BATCH_ITEMS) throw problems.tooManyItems(MAX_BATCH_ITEMS);
  return body;
}
