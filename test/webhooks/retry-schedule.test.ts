import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DISABLE_AFTER_MS, MAX_DELAY_SECONDS, retryDelaySeconds } from '../../src/webhooks/retry-schedule.js';

test('the first repeat comes within 10 s; then the wait doubles, with jitter, up to an hour', () => {
  const lowest = () => 0;
  const highest = () => 1;
  assert.equal(retryDelaySeconds(1, lowest), 5);
  assert.equal(retryDelaySeconds(1, highest), 10);
  const steps = Array.from({ length: 12 }, (_, n) => retryDelaySeconds(n + 1, highest));
  assert.deepEqual(steps, [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600]);
  for (let failures = 1; failures < 200; failures++) {
    const delay = retryDelaySeconds(failures);
    assert.ok(delay > 0 && delay <= MAX_DELAY_SECONDS, `${failures}: ${delay}`);
  }
  // Jitter spreads endpoints that failed together.
  const spread = new Set(Array.from({ length: 50 }, () => Math.round(retryDelaySeconds(6))));
  assert.ok(spread.size > 10, `only ${spread.size} different waits`);
});

test("an endpoint's Retry-After is honoured from a second up to an hour", () => {
  assert.equal(
    retryDelaySeconds(1, () => 0.5, 120),
    120,
  );
  assert.equal(
    retryDelaySeconds(9, () => 0.5, 0),
    1,
  );
  assert.equal(
    retryDelaySeconds(1, () => 0.5, 86_400),
    3600,
  );
});

test('three days of failed attempts disable the endpoint (the statement that records a failure reads this)', () => {
  assert.equal(DISABLE_AFTER_MS, 3 * 24 * 3600 * 1000);
});
