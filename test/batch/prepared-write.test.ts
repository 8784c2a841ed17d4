import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deduplicate } from '../../src/batch/prepared-write.js';
import { prices } from '../../src/resources/prices.js';
import { stocks } from '../../src/resources/stocks.js';

// Rows in field-table order: stocks and prices both key on (product_code, second field).
const row = (product: string, second: string, value: string) => [product, second, value];

test('deduplicate: distinct first key parts, or distinct whole keys, leave the batch as it is', () => {
  const distinctFirst = [row('P1', 'W1', '1'), row('P2', 'W1', '2'), row('P3', 'W1', '3')];
  assert.equal(deduplicate(stocks, distinctFirst), distinctFirst);
  const repeatedFirst = [row('P1', 'W1', '1'), row('P1', 'W2', '2'), row('P2', 'W1', '3')];
  assert.equal(deduplicate(stocks, repeatedFirst), repeatedFirst);
});

test('deduplicate: a repeated whole key keeps the first row when inserting, the last when upserting', () => {
  // The repeat comes after the first key parts were seen distinct for a while.
  const rows = [row('P1', 'L1', 'a'), row('P2', 'L1', 'b'), row('P3', 'L1', 'c'), row('P1', 'L1', 'd')];
  assert.deepEqual(deduplicate(stocks, rows), [rows[0], rows[1], rows[2]]);
  assert.deepEqual(deduplicate(prices, rows), [rows[3], rows[1], rows[2]]);
});
