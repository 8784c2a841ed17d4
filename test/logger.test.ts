import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withoutSecrets } from '../src/http/logger.js';

test('secrets put in a query string never reach the log; filters stay readable', () => {
  assert.equal(
    withoutSecrets('/token?grant_type=client_credentials&client_id=cl_1&client_secret=s3cr3t'),
    '/token?grant_type=client_credentials&client_id=cl_1&client_secret=[redacted]',
  );
  assert.equal(
    withoutSecrets('/v1/customers?Subscription-Key=sk_x.y&limit=5'),
    '/v1/customers?Subscription-Key=[redacted]&limit=5',
  );
  assert.equal(withoutSecrets('/v1/customers?client_id=C1&limit=5'), '/v1/customers?client_id=C1&limit=5');
  assert.equal(withoutSecrets('/x?access_token=abc#f'), '/x?access_token=[redacted]#f');
});
