import type { ItemError } from './validate-items.js';

/**
 * What the batch pipeline refuses, as the domain knows it: no status codes and no bodies. The one
 * error handler (src/http/domain-problems.ts) turns each into the spec's answer.
 */

/** Which array rule a batch body breaks (backoffice-api.md 4.3, 7.1); a name a worker thread can send back. */
export type ArrayRule = 'invalidJson' | 'notAnArray' | 'emptyArray' | 'tooManyItems';

/** The body is not JSON, or not an array of 1 to MAX_BATCH_ITEMS elements: nothing was validated. */
export class BatchArrayRefused extends Error {
  readonly rule: ArrayRule;
  constructor(rule: ArrayRule) {
    super(`batch array refused: ${rule}`);
    this.name = 'BatchArrayRefused';
    this.rule = rule;
  }
}

/** A batch with invalid items (or items naming unknown references): nothing was written. */
export class InvalidBatch extends Error {
  readonly errors: ItemError[];
  constructor(errors: ItemError[]) {
    super('invalid batch');
    this.name = 'InvalidBatch';
    this.errors = errors;
  }
}

/** The body passed the endpoint's byte limit (declared, or as it arrived). */
export class BodyTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`body over ${limit} bytes`);
    this.name = 'BodyTooLarge';
    this.limit = limit;
  }
}

/** A batch query parameter (outcomes, dry_run, on_invalid) with a value it does not take. */
export class InvalidBatchParameter extends Error {
  readonly parameter: string;
  readonly reason: string;
  constructor(parameter: string, reason: string) {
    super(`${parameter}: ${reason}`);
    this.name = 'InvalidBatchParameter';
    this.parameter = parameter;
    this.reason = reason;
  }
}

/**
 * Why a batch was not let in (src/batch/batch-admission.ts): its tenant has as many batches waiting
 * as it may, the process holds as many bodies as its budget allows, or the batch waited too long (or
 * its client left). Nothing of it was written; it may be sent again after retryAfterSeconds.
 */
export type NotAdmittedReason = 'queueFull' | 'bodiesFull' | 'busy';

export class BatchNotAdmitted extends Error {
  readonly reason: NotAdmittedReason;
  readonly retryAfterSeconds: number;
  constructor(reason: NotAdmittedReason, retryAfterSeconds: number) {
    super(`batch not admitted: ${reason}`);
    this.name = 'BatchNotAdmitted';
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Thrown when validation itself fails (a bug), as opposed to finding invalid input. */
export class ValidationCrash extends Error {
  constructor(cause: unknown) {
    super('validation failed unexpectedly', { cause });
    this.name = 'ValidationCrash';
  }
}
