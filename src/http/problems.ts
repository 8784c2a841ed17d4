import { cutAnswer } from '../batch/batch-errors.js';

/**
 * The catalogue of error answers: every error body of the service is made here, in the spec's shape
 * {statusCode, errors: [...]} (backoffice-api.md 7.1, extensions.md 2 and 6).
 */
export class HttpProblem extends Error {
  readonly statusCode: number;
  readonly errors: readonly object[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(statusCode: number, errors: readonly object[], headers: Record<string, string> = {}) {
    super(`HTTP ${statusCode}`);
    this.name = 'HttpProblem';
    this.statusCode = statusCode;
    this.errors = errors;
    this.headers = headers;
  }

  body() {
    return { statusCode: this.statusCode, errors: this.errors };
  }
}

const arrayProblem = (message: string) => new HttpProblem(400, [{ index: null, field: null, message }]);

const REALM = 'sfa-backoffice';

/**
 * Every 401 carries a challenge (RFC 7235). The error attributes of RFC 6750 3 only when a token came
 * and was refused; a description must stay within the quoted-string characters RFC 6750 allows.
 */
const bearerChallenge = (description?: string) => ({
  'www-authenticate':
    description === undefined
      ? `Bearer realm="${REALM}"`
      : `Bearer realm="${REALM}", error="invalid_token", error_description="${description.replace(/["\\]/g, "'")}"`,
});
const unauthorized = (message: string, description?: string) =>
  new HttpProblem(401, [{ message }], bearerChallenge(description));

/**
 * Seconds a client is told to wait when the database cannot be reached or takes no writes (a
 * failover, a restart): long enough not to hammer a promotion under way, short enough that writes
 * resume within seconds of it (docs/decisions/0143-come-back-answers.md).
 */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export const problems = {
  invalidJson: () => new HttpProblem(400, [{ message: 'Invalid JSON in request body' }]),
  notAnArray: () => arrayProblem('Request body must be an array'),
  emptyArray: () => arrayProblem('Request body cannot be empty'),
  tooManyItems: (max: number) => arrayProblem(`Array exceeds maximum limit of ${max} items`),
  /** One element per invalid item; a list past MAX_ERRORS_PER_ANSWER problems is cut (src/batch/batch-errors.ts). */
  invalidItems: (errors: readonly object[]) => new HttpProblem(400, cutAnswer(errors)),
  bodyTooLarge: (limit: number) =>
    new HttpProblem(413, [{ message: `Request body exceeds the limit of ${limit} bytes for this endpoint` }]),
  unsupportedMediaType: () => new HttpProblem(415, [{ message: 'Content-Type must be application/json' }]),
  /** A JSON body declared in another charset: JSON is UTF-8 (RFC 8259 8.1), nothing else is decoded. */
  unsupportedCharset: () => new HttpProblem(415, [{ message: 'Content-Type charset must be utf-8' }]),
  notFound: (method: string, url: string) =>
    new HttpProblem(404, [{ message: `Route ${method} ${url.split('?')[0]} not found` }]),
  clientError: (statusCode: number, message: string) => new HttpProblem(statusCode, [{ message }]),
  // Refused by Node's HTTP parser before any route (src/http/client-errors.ts).
  /** Bytes HTTP does not allow (a NUL or DEL in a header, a broken request line); reason is llhttp's. */
  malformedRequest: (reason: string) =>
    new HttpProblem(400, [{ message: `Malformed HTTP request: ${reason}` }]),
  headersTooLarge: (limit: number) =>
    new HttpProblem(431, [{ message: `Request headers exceed the limit of ${limit} bytes` }]),
  requestTimeout: () =>
    new HttpProblem(408, [{ message: 'The request was not received in time; the connection is closed' }]),
  /** Past the rate limit of the subscription key (src/http/rate-limit.ts). */
  tooManyRequests: (
    limit: number,
    windowSeconds: number,
    retryAfter: number,
    headers: Record<string, string>,
  ) =>
    new HttpProblem(
      429,
      [
        {
          message: `Rate limit of ${limit} requests per ${windowSeconds} seconds exceeded for this subscription key; retry in ${retryAfter} seconds`,
        },
      ],
      { ...headers, 'retry-after': String(retryAfter) },
    ),
  /** Too many unknown subscription keys sent with one tenant's token (src/http/guard-hook.ts). */
  tooManyKeyFailures: (retryAfter: number) =>
    new HttpProblem(
      429,
      [{ message: `Too many requests with an invalid subscription key; retry in ${retryAfter} seconds` }],
      { 'retry-after': String(retryAfter) },
    ),
  /** The tenant already has as many batches waiting as it may (src/admission/batch-admission.ts). */
  batchQueueFull: (retryAfter: number) =>
    new HttpProblem(
      429,
      [
        {
          message: `Too many batches of this tenant are waiting to be processed; retry in ${retryAfter} seconds`,
        },
      ],
      { 'retry-after': String(retryAfter) },
    ),
  /** The process holds as many batch bodies as its memory budget allows; this one was not kept. */
  batchBodiesFull: (retryAfter: number) =>
    new HttpProblem(
      503,
      [{ message: `The service holds too many batch bodies right now; retry in ${retryAfter} seconds` }],
      { 'retry-after': String(retryAfter) },
    ),
  /** A batch waited too long for its turn; nothing of it was read or written. */
  batchBusy: (retryAfter: number) =>
    new HttpProblem(
      503,
      [
        {
          message: `The service is busy with other batches; this one was not started, retry in ${retryAfter} seconds`,
        },
      ],
      { 'retry-after': String(retryAfter) },
    ),
  // Retry-safe writes (extensions.md 8, 9).
  /** The Idempotency-Key header is not 1 to 255 visible ASCII characters. */
  invalidIdempotencyKey: () =>
    new HttpProblem(400, [
      { field: 'Idempotency-Key', message: 'Header must be 1 to 255 visible ASCII characters' },
    ]),
  /** The key was kept for another endpoint or body. */
  idempotencyKeyReused: () =>
    new HttpProblem(422, [{ message: 'Idempotency-Key was used with a different request' }]),
  /** A request with the key is still running (here or on another instance). */
  idempotencyInProgress: (retryAfter: number) =>
    new HttpProblem(409, [{ message: 'A request with this Idempotency-Key is in progress' }], {
      'retry-after': String(retryAfter),
    }),
  /** A batch query parameter (outcomes, dry_run, on_invalid) with a value it does not take. */
  invalidBatchParameter: (field: string, message: string) => new HttpProblem(400, [{ field, message }]),
  /** 500 with one of the spec's four prefixes; detail is safe to show (no SQL, no stack). */
  server: (message: string) => new HttpProblem(500, [{ message }]),
  /**
   * The database cannot be reached: come back. The contract's batch endpoints keep their 500
   * (backoffice-api.md 7.1 allows them 201, 400 and 500 only), every other endpoint answers 503.
   */
  databaseUnavailable: (message: string, statusCode: 500 | 503) =>
    new HttpProblem(statusCode, [{ message }], { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) }),

  // The guard of /api and /v1 (extensions.md 2).
  missingSubscriptionKey: () => unauthorized('Missing Subscription-Key header'),
  invalidSubscriptionKey: () => unauthorized('Invalid or revoked subscription key'),
  missingAccessToken: () =>
    unauthorized('Missing access token: send Authorization: Bearer <access_token> from POST /token'),
  invalidAccessToken: (description: string) => unauthorized(description, description),
  credentialsOfDifferentTenants: () =>
    unauthorized('The subscription key and the access token belong to different tenants'),
};

/**
 * The error answers of POST /token, in the shape of RFC 6749 5.2 rather than the API's own: OAuth
 * client libraries read `error` and `error_description`.
 */
export class OAuthProblem extends Error {
  readonly statusCode: number;
  readonly error: string;
  readonly description: string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(statusCode: number, error: string, description: string, headers: Record<string, string> = {}) {
    super(`OAuth ${error}`);
    this.name = 'OAuthProblem';
    this.statusCode = statusCode;
    this.error = error;
    this.description = description;
    this.headers = headers;
  }

  body() {
    return { error: this.error, error_description: this.description };
  }
}

export const oauthProblems = {
  invalidRequest: (description: string, statusCode = 400) =>
    new OAuthProblem(statusCode, 'invalid_request', description),
  unsupportedGrantType: () =>
    new OAuthProblem(400, 'unsupported_grant_type', 'grant_type must be client_credentials'),
  /** RFC 6749 5.2: 401 with a challenge of the scheme the client used (Basic), else 400. */
  invalidClient: (description: string, viaBasic: boolean) =>
    viaBasic
      ? new OAuthProblem(401, 'invalid_client', description, { 'www-authenticate': `Basic realm="${REALM}"` })
      : new OAuthProblem(400, 'invalid_client', description),
  /** Too many failed attempts for this client id or address (RFC 6585 429, RFC 8628 slow_down). */
  tooManyFailures: (retryAfterSeconds: number) =>
    new OAuthProblem(429, 'slow_down', `Too many failed attempts; try again in ${retryAfterSeconds} s`, {
      'retry-after': String(retryAfterSeconds),
    }),
  /** The database cannot be reached: come back (the API's 503, in RFC 6749's shape). */
  databaseUnavailable: () =>
    new OAuthProblem(
      503,
      'temporarily_unavailable',
      `The database cannot be reached; try again in ${DATABASE_RETRY_AFTER_SECONDS} s`,
      { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
    ),
  /** Too many client secrets being checked in this process at once (src/auth/hashing-gate.ts). */
  hashingBusy: (retryAfterSeconds: number) =>
    new OAuthProblem(
      503,
      'temporarily_unavailable',
      `Too many token requests being checked; try again in ${retryAfterSeconds} s`,
      { 'retry-after': String(retryAfterSeconds) },
    ),
};
