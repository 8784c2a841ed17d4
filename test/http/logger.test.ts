import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalisedParameterName, withoutSecrets } from '../../src/http/logger.js';

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
  assert.equal(
    withoutSecrets(
      '/v1/deliveries/pending?client_id=C1&seller_id=S2&reported_from=2024-01-02&sort=-reported_at&page=2&limit=5',
    ),
    '/v1/deliveries/pending?client_id=C1&seller_id=S2&reported_from=2024-01-02&sort=-reported_at&page=2&limit=5',
  );
  // A `#` does not end the value: a server may read it as part of it.
  assert.equal(withoutSecrets('/x?access_token=abc#f'), '/x?access_token=[redacted]');
  assert.equal(withoutSecrets('/health'), '/health');
});

test('names are compared percent-decoded, case-folded and without separators', () => {
  const spellings = [
    'client_secret',
    'client%5Fsecret',
    'client%5fsecret',
    'CLIENT_SECRET',
    'client-secret',
    'client.secret',
    'client+secret',
    'clientSecret',
    'client%255Fsecret',
    'client_secret[]',
    'subscription-key',
    'subscription%2Dkey',
    'Subscription_Key',
    'subscriptionKey',
    'key',
    '%6Bey',
    '%4B%45%59',
    'api_key',
    'apiKey',
    'x-api-key',
    'password',
    'Passwd',
    'pwd',
    'clientSecret',
    'Authorization',
    'authorization',
    'access_token',
    'accessToken',
    'id_token',
    'refresh-token',
    'token',
    'bearer',
    'secret',
    'ｃｌｉｅｎｔ＿ｓｅｃｒｅｔ',
  ];
  for (const name of spellings) {
    const url = `/v1/customers?limit=5&${name}=CANARY&page=2`;
    const logged = withoutSecrets(url);
    assert.ok(!logged.includes('CANARY'), `${name}: ${logged}`);
    assert.equal(logged, `/v1/customers?limit=5&${name}=[redacted]&page=2`, name);
  }
  // `;` separates too, and a name with a stray `%` is still read.
  assert.equal(withoutSecrets('/x?a=1;password=CANARY'), '/x?a=1;password=[redacted]');
  assert.equal(withoutSecrets('/x?client%_secret=CANARY'), '/x?client%_secret=[redacted]');
  assert.equal(normalisedParameterName('Client%5FSecret'), 'clientsecret');
  assert.equal(normalisedParameterName('subscription%2Dkey'), 'subscriptionkey');
});
