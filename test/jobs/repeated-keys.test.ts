import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RepeatedKeys } from '../../src/jobs/repeated-keys.js';

/*
 * RepeatedKeys (src/jobs/repeated-keys.ts): every key that occurs more than once is kept with its
 * last line, whatever the filter answers; keys it keeps by a false alarm are few when the filter is
 * sized for the file, and stay few when it is small.
 */

/** Keys of customers' codes: `count` distinct ones, `repeated` of them sent again later. */
function file(count: number, repeated: number) {
  const lines: string[] = [];
  for (let n = 0; n < count; n++) lines.push(`C${String(n).padStart(7, '0')}`);
  for (let n = 0; n < repeated; n++) lines.push(lines[(n * 7919) % count]!);
  const lastLine = new Map<string, number>();
  const times = new Map<string, number>();
  lines.forEach((key, at) => {
    lastLine.set(key, at + 2);
    times.set(key, (times.get(key) ?? 0) + 1);
  });
  const repeats = new Map([...lastLine].filter(([key]) => times.get(key)! > 1));
  assert.equal(repeats.size, repeated);
  return { lines, repeats };
}

function noted(fileBytes: number, lines: readonly string[]) {
  const keys = new RepeatedKeys(fileBytes);
  lines.forEach((key, at) => {
    keys.add(key, at + 2);
  });
  return new Set(keys.repeatedLines());
}

test('every repeated key is kept with its last line; almost no other with a filter sized for the file', () => {
  const { lines, repeats } = file(200_000, 1_000);
  const kept = noted(lines.length * 60, lines);
  for (const [key, line] of repeats) assert.ok(kept.has(line), `${key} at line ${line}`);
  const alarms = kept.size - repeats.size;
  assert.ok(alarms <= 20, `${alarms} keys kept by a false alarm of 200,000`);
});

test('a filter far too small for the file still keeps every repeat, and false alarms stay a minority', () => {
  const { lines, repeats } = file(10_000, 100);
  const kept = noted(1, lines);
  for (const [key, line] of repeats) assert.ok(kept.has(line), `${key} at line ${line}`);
  // 65,536 bits for 10,000 keys, 6.5 a key: a filter spread over its blocks errs for a few in a hundred.
  const alarms = kept.size - repeats.size;
  assert.ok(alarms < 1_000, `${alarms} keys kept by a false alarm of 10,000`);
});
