import { cutAnswer } from '../../batch/batch-errors.js';
import type { BatchOptions } from '../../batch/batch-options.js';
import type { BatchResult } from '../../batch/write-block.js';
import { problemAnswer } from '../../http/keyed-reply.js';
import { problems } from '../../http/problems.js';
import type { Answer } from '../../idempotency/answer-once.js';
import type { BatchResource } from '../../resources/batch-resource.js';

/** The status of a written batch's answer. */
export const WRITTEN = 201;

/**
 * A batch's answer as text. 201 {statusCode, message, created, updated, ignored} (extensions.md 5),
 * the same bytes JSON.stringify gave before; a dry run 200 "Validation passed"; then `rejected` and
 * `errors` (on_invalid=skip, errors cut as the 400 cuts them) and `items` (outcomes=true). Written
 * as text so that a 10,000-item outcome list costs one join, and a kept answer is these bytes.
 */
export function batchAnswer(resource: BatchResource, result: BatchResult, options: BatchOptions): Answer {
  if (result.kind === 'invalid') return problemAnswer(problems.invalidItems(result.errors));
  const { created, updated, ignored } = result.counts;
  const status = options.dryRun ? 200 : WRITTEN;
  const message = options.dryRun ? 'Validation passed' : resource.message;
  let body = `{"statusCode":${status},"message":${JSON.stringify(message)},"created":${created},"updated":${updated},"ignored":${ignored}`;
  if (result.rejected) {
    body += `,"rejected":${result.rejected.count},"errors":${JSON.stringify(cutAnswer(result.rejected.errors))}`;
  }
  if (result.itemsText !== undefined) body += `,"items":${result.itemsText}`;
  return { status, body: `${body}}` };
}
