import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FinalError, HttpError, isRetryable } from '../../src/upload/retry.js';

/* Which failures the upload command sends again (src/upload/retry.ts, decision 0135). */

const withCode = (code: string) => Object.assign(new Error(code), { code });

test('sent again: no answer (refused, reset, timed out), 5xx, 429, a 409 with Retry-After', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'])
    assert.ok(isRetryable(withCode(code)), code);
  assert.ok(isRetryable(new HttpError(503, 'busy', 1_000)));
  assert.ok(isRetryable(new HttpError(500, 'Error connecting to database: ...', 5_000)));
  assert.ok(isRetryable(new HttpError(429, 'limit', 2_000)));
  assert.ok(isRetryable(new HttpError(409, 'in progress', 1_000)));
});

test('not sent again: refused credentials, a 4xx, a file that cannot be read', () => {
  assert.ok(!isRetryable(new FinalError('credentials refused')));
  assert.ok(!isRetryable(new HttpError(400, 'bad', undefined)));
  assert.ok(!isRetryable(new HttpError(409, 'conflict', undefined)));
  for (const code of ['ENOENT', 'EACCES', 'EISDIR']) assert.ok(!isRetryable(withCode(code)), code);
});
