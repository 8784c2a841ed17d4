import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

test('defaults: embedded database under ./data, port 3000 on loopback, generated token secret', () => {
  const config = loadConfig({});
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.dataDir, resolve('./data'));
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.logLevel, 'info');
  assert.equal(config.tokenSecret, undefined);
  assert.equal(config.tokenTtlSeconds, 3600);
  assert.equal(config.statementTimeoutMs, 60_000);
  // extensions.md 8: kept answers live at least 7 days.
  assert.equal(config.idempotencyTtlSeconds, 7 * 86400);
  assert.ok(Object.isFrozen(config));
});

test('values from the environment', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgresql://app@db:5432/sfa',
    DATA_DIR: '/var/lib/sfa',
    PORT: '8080',
    HOST: '0.0.0.0',
    LOG_LEVEL: 'warn',
    TOKEN_SECRET: 'x'.repeat(32),
    TOKEN_TTL_SECONDS: '600',
    DB_POOL_SIZE: '25',
    DB_STATEMENT_TIMEOUT_MS: '15000',
    IDEMPOTENCY_TTL_SECONDS: String(30 * 86400),
    FEED_STALL_WARN_SECONDS: '15',
    JOB_LEASE_SECONDS: '10',
  });
  assert.equal(config.databaseUrl, 'postgresql://app@db:5432/sfa');
  assert.equal(config.dataDir, '/var/lib/sfa');
  assert.deepEqual([config.port, config.host, config.logLevel], [8080, '0.0.0.0', 'warn']);
  assert.deepEqual([config.tokenTtlSeconds, config.poolSize], [600, 25]);
  assert.equal(config.statementTimeoutMs, 15_000);
  assert.equal(config.idempotencyTtlSeconds, 30 * 86400);
  assert.equal(config.feedStallWarnSeconds, 15);
  assert.equal(loadConfig({}).feedStallWarnSeconds, 60);
  assert.equal(config.jobLeaseSeconds, 10);
  assert.equal(loadConfig({}).jobLeaseSeconds, 8);
});

test('a bad value stops the start with a message naming the setting and the value', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /^PORT must be a whole number from 0 to 65535, got "eighty"$/],
    [{ PORT: '70000' }, /^PORT must be a whole number from 0 to 65535, got "70000"$/],
    [{ DB_POOL_SIZE: '0' }, /^DB_POOL_SIZE must be a whole number from 1 to 200/],
    [{ JOB_LEASE_SECONDS: '4' }, /^JOB_LEASE_SECONDS must be a whole number from 5 to 3600/],
    [{ BATCH_BODIES_MAX_MB: '8' }, /^BATCH_BODIES_MAX_MB must be a whole number from 64 to 65536/],
    [
      { DB_STATEMENT_TIMEOUT_MS: '50' },
      /^DB_STATEMENT_TIMEOUT_MS must be a whole number from 100 to 3600000/,
    ],
    [{ TOKEN_TTL_SECONDS: '30' }, /^TOKEN_TTL_SECONDS must be a whole number from 60 to 86400/],
    // Fewer than 7 days would break the promise of extensions.md 8; more than a year is a mistake.
    [
      { IDEMPOTENCY_TTL_SECONDS: String(7 * 86400 - 1) },
      /^IDEMPOTENCY_TTL_SECONDS must be a whole number from 604800 to 31622400/,
    ],
    [
      { IDEMPOTENCY_TTL_SECONDS: String(366 * 86400 + 1) },
      /^IDEMPOTENCY_TTL_SECONDS must be a whole number from 604800 to 31622400/,
    ],
    [{ FEED_STALL_WARN_SECONDS: '0' }, /^FEED_STALL_WARN_SECONDS must be a whole number from 1 to 86400/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/$/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of .*, got "loud"$/],
    [{ TOKEN_SECRET: 'short' }, /^TOKEN_SECRET must be at least 32 bytes long$/],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) => error instanceof ConfigError && message.test(error.message),
    );
  }
});

test('TRUST_PROXY: off by default; true, a hop count or addresses; anything else refused', () => {
  assert.equal(loadConfig({}).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
  assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1');
  assert.throws(() => loadConfig({ TRUST_PROXY: 'yes please' }), /^ConfigError: TRUST_PROXY must be/);
});

test('PUBLIC_BASE_URL: an absolute http(s) URL kept without its final slash; anything else refused', () => {
  assert.equal(loadConfig({}).publicBaseUrl, undefined);
  assert.equal(
    loadConfig({ PUBLIC_BASE_URL: 'https://API.example.com/' }).publicBaseUrl,
    'https://api.example.com',
  );
  assert.equal(
    loadConfig({ PUBLIC_BASE_URL: 'http://10.0.0.7:8080/backoffice/' }).publicBaseUrl,
    'http://10.0.0.7:8080/backoffice',
  );
  assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://[::1]:8443' }).publicBaseUrl, 'https://[::1]:8443');
  for (const raw of [
    'api.example.com',
    '/backoffice',
    'ftp://api.example.com',
    'javascript:alert(1)',
    'https://',
    'https:///path',
    'https://api.example.com/?page=1',
    'https://api.example.com/?',
    'https://api.example.com/#top',
    'https://api example.com',
    'https://api.example.com:99999',
  ]) {
    assert.throws(
      () => loadConfig({ PUBLIC_BASE_URL: raw }),
      /^ConfigError: PUBLIC_BASE_URL must be an absolute/,
      raw,
    );
  }
  assert.throws(
    () => loadConfig({ PUBLIC_BASE_URL: 'https://admin:hunter2@api.example.com' }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message === 'PUBLIC_BASE_URL must not carry a user name or password' &&
      !error.message.includes('hunter2'),
  );
});
