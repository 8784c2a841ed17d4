import pRetry, { AbortError } from 'p-retry';

/**
 * Retries of the upload command (extensions.md 15): a request that failed on the network, or was
 * answered 5xx, 429 or 409 "in progress" (an Idempotency-Key whose first request still runs), is sent
 * again after a growing, randomized pause, or after the answer's Retry-After when that is longer.
 * Any other answer is final. p-retry counts the attempts and computes the pauses
 * (docs/decisions/0135-upload-retries-and-idempotency-keys.md).
 */

/** An answer that is not the one asked for. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Milliseconds the service asked to wait (Retry-After), when it did. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** A failure no retry helps (refused credentials). */
export class FinalError extends Error {}

/** A file that cannot be read (gone, not allowed, a directory): sending again changes nothing. */
const LOCAL_FILE_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'EISDIR', 'ENOTDIR']);

/** Whether sending the request again may help. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof FinalError) return false;
  if (LOCAL_FILE_CODES.has(String((error as { code?: unknown } | null)?.code))) return false;
  if (error instanceof HttpError) {
    return error.status >= 500 || error.status === 429 || (error.status === 409 && !!error.retryAfterMs);
  }
  // No answer at all: a refused or cut connection, a timeout.
  return error instanceof Error;
}

export interface RetryPolicy {
  /** Attempts after the first. */
  retries: number;
  /** The first pause, in ms; each next one doubles, up to maxDelayMs, randomized by up to 2x. */
  minDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 8, minDelayMs: 500, maxDelayMs: 30_000 };

export interface RetryNotice {
  what: string;
  attempt: number;
  delayMs: number;
  reason: string;
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Runs the attempt until it succeeds, fails finally, or the retries run out; the last error then. */
export function retrying<T>(
  what: string,
  policy: RetryPolicy,
  attempt: () => Promise<T>,
  onRetry: (notice: RetryNotice) => void,
): Promise<T> {
  return pRetry(
    async () => {
      try {
        return await attempt();
      } catch (error) {
        if (!isRetryable(error)) throw new AbortError(error as Error);
        throw error;
      }
    },
    {
      retries: policy.retries,
      factor: 2,
      minTimeout: policy.minDelayMs,
      maxTimeout: policy.maxDelayMs,
      randomize: true,
      // Called before p-retry's own pause: the rest of a longer Retry-After is waited here.
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft, retryDelay }) => {
        if (retriesLeft <= 0 || !isRetryable(error)) return;
        const asked = error instanceof HttpError ? (error.retryAfterMs ?? 0) : 0;
        onRetry({
          what,
          attempt: attemptNumber,
          delayMs: Math.max(asked, retryDelay),
          reason: error.message,
        });
        if (asked > retryDelay) await pause(asked - retryDelay);
      },
    },
  );
}
