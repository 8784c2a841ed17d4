import { BatchNotAdmitted } from '../admission/batch-admission.js';
import { BatchArrayRefused, InvalidBatch, InvalidBatchParameter } from '../batch/batch-errors.js';
import {
  IdempotencyKeyInProgress,
  IdempotencyKeyReused,
  InvalidIdempotencyKey,
} from '../idempotency/idempotency-errors.js';
import { JobRefusal } from '../jobs/job-refusal.js';
import { MAX_PART_BYTES, PartTooLarge } from '../jobs/jobs.js';
import { WebhookRefusal } from '../webhooks/endpoints.js';
import { HttpProblem, problems } from './problems.js';
import { BodyTooLarge } from './receive-body.js';

/**
 * The answer to each refusal of the domain layers (src/batch/batch-errors.ts,
 * src/idempotency/idempotency-errors.ts, src/webhooks/endpoints.ts), or undefined for any other error. The error handler and the
 * routes that keep an answer (a 400 under an Idempotency-Key) both ask here, so a refusal has one
 * answer wherever it is sent from.
 */
export function problemOf(error: unknown): HttpProblem | undefined {
  if (error instanceof BatchArrayRefused) {
    return error.rule === 'tooManyItems' ? problems.tooManyItems(error.max) : problems[error.rule]();
  }
  if (error instanceof InvalidBatch) return problems.invalidItems(error.errors);
  if (error instanceof BodyTooLarge) return problems.bodyTooLarge(error.limit);
  if (error instanceof InvalidBatchParameter)
    return problems.invalidBatchParameter(error.parameter, error.reason);
  if (error instanceof BatchNotAdmitted) {
    switch (error.reason) {
      case 'queueFull':
        return problems.batchQueueFull(error.retryAfterSeconds);
      case 'bodiesFull':
        return problems.batchBodiesFull(error.retryAfterSeconds);
      case 'busy':
        return problems.batchBusy(error.retryAfterSeconds);
    }
  }
  if (error instanceof InvalidIdempotencyKey) return problems.invalidIdempotencyKey();
  if (error instanceof IdempotencyKeyReused) return problems.idempotencyKeyReused();
  if (error instanceof IdempotencyKeyInProgress)
    return problems.idempotencyInProgress(error.retryAfterSeconds);
  if (error instanceof WebhookRefusal) return new HttpProblem(error.statusCode, error.errors);
  if (error instanceof PartTooLarge) return problems.bodyTooLarge(MAX_PART_BYTES);
  if (error instanceof JobRefusal) return new HttpProblem(error.statusCode, error.errors);
  return undefined;
}
