/**
 * What a keyed request is refused for (extensions.md 8), as the domain knows it; the error handler
 * (src/http/domain-problems.ts) gives each its status and the spec's message.
 */

/** The Idempotency-Key header is not 1 to 255 visible ASCII characters. */
export class InvalidIdempotencyKey extends Error {
  constructor() {
    super('malformed Idempotency-Key');
    this.name = 'InvalidIdempotencyKey';
  }
}

/** The key's kept answer belongs to another endpoint or body. */
export class IdempotencyKeyReused extends Error {
  constructor() {
    super('Idempotency-Key used with a different request');
    this.name = 'IdempotencyKeyReused';
  }
}

/** A request with the key is still running, here or on another instance. */
export class IdempotencyKeyInProgress extends Error {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('Idempotency-Key in progress');
    this.name = 'IdempotencyKeyInProgress';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
