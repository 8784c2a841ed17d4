import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NOT_A_DELIVERY_CODE, notDeliveryCodes } from '../../src/deliveries/acknowledge.js';

test('the acknowledgement refuses what the delivery code field refuses, with one message', () => {
  assert.equal(NOT_A_DELIVERY_CODE, 'Item must be a delivery code: a string of 1 to 30 characters');
  const body = [
    'ok',
    5,
    '',
    ' \t',
    'x'.repeat(30),
    'x'.repeat(31),
    '😀'.repeat(30),
    '😀'.repeat(31),
    'a\u0000',
    null,
    [],
    ' a ',
  ];
  assert.deepEqual(
    notDeliveryCodes(body).map((refused) => refused.index),
    [1, 2, 3, 5, 7, 8, 9, 10],
  );
  assert.deepEqual(notDeliveryCodes([7])[0], {
    index: 0,
    errors: [{ field: null, message: NOT_A_DELIVERY_CODE }],
  });
});
