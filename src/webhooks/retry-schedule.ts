/*
 * When a failed delivery is attempted again (extensions.md 11): exponential backoff with jitter, the
 * first repeat within 10 seconds, then growing to at most an hour between attempts; a 429's or 503's
 * Retry-After instead, up to an hour; and, after 3 days of failed attempts, the endpoint disabled.
 */

/** The first repeat waits between half of this and this. */
export const FIRST_DELAY_SECONDS = 10;
export const MAX_DELAY_SECONDS = 3600;
const MIN_RETRY_AFTER_SECONDS = 1;
/**
 * Failing this long (from the first failed attempt of a row of failures) disables the endpoint: the
 * statement that records a failure takes it from here (src/sql/webhook-streams.ts).
 */
export const DISABLE_AFTER_MS = 3 * 24 * 3600 * 1000;

/**
 * Seconds until the next attempt after `failures` failed attempts in a row (1 after the first), with
 * jitter from `random` (0 to 1): half the step plus up to half again, so endpoints that failed
 * together do not come back together. A Retry-After the endpoint gave (seconds, at most an hour)
 * is honoured instead.
 */
export function retryDelaySeconds(
  failures: number,
  random: () => number = Math.random,
  retryAfter?: number,
): number {
  // At least a second: a Retry-After of 0 would otherwise bring the endpoint back every round.
  if (retryAfter !== undefined)
    return Math.min(MAX_DELAY_SECONDS, Math.max(MIN_RETRY_AFTER_SECONDS, retryAfter));
  const step = Math.min(
    MAX_DELAY_SECONDS,
    FIRST_DELAY_SECONDS * 2 ** Math.max(0, Math.min(failures - 1, 20)),
  );
  return Math.min(MAX_DELAY_SECONDS, step / 2 + (step / 2) * random());
}
