import { problems } from '../http/problems.js';
import { MAX_BATCH_ITEMS } from '../resources/batch-resource.js';

/** Which array rule a batch body breaks; a name a worker thread can send back (src/batch/batch-worker.ts). */
export type ArrayProblem = 'invalidJson' | 'notAnArray' | 'emptyArray' | 'tooManyItems';

/** The array rules every batch body obeys (backoffice-api.md 4.3, 7.1), in the spec's order. */
export function arrayProblemOf(body: unknown): ArrayProblem | undefined {
  if (body === undefined) return 'invalidJson';
  if (!Array.isArray(body)) return 'notAnArray';
  if (body.length === 0) return 'emptyArray';
  if (body.length > MAX_BATCH_ITEMS) return 'tooManyItems';
  return undefined;
}

/** The 400 of a broken array rule. */
export function arrayProblem(problem: ArrayProblem): Error {
  return problem === 'tooManyItems' ? problems.tooManyItems(MAX_BATCH_ITEMS) : problems[problem]();
}

/** The body as the batch's items, or the 400 of the first array rule it breaks. */
export function checkBatchArray(body: unknown): unknown[] {
  const problem = arrayProblemOf(body);
  if (problem) throw arrayProblem(problem);
  return body as unknown[];
}
