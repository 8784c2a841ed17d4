import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callerAddress } from '../../src/auth/caller-address.js';

test('callerAddress: IPv4 as it is, IPv6 by its /64, mapped IPv4 as IPv4', () => {
  assert.equal(callerAddress('203.0.113.7'), '203.0.113.7');
  assert.equal(callerAddress('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(callerAddress('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(callerAddress('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(callerAddress('2001:0db8:0001:0002:ffff::9'), '2001:db8:1:2::/64');
  assert.equal(callerAddress('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(callerAddress('::1'), '0:0:0:0::/64');
  assert.equal(callerAddress('fe80::1%eth0'), 'fe80:0:0:0::/64');
  // Two addresses of one /64 are one caller; of two networks, two.
  assert.equal(callerAddress('2001:db8:a:b::1'), callerAddress('2001:db8:a:b:ffff:ffff:ffff:ffff'));
  assert.notEqual(callerAddress('2001:db8:a:b::1'), callerAddress('2001:db8:a:c::1'));
});
