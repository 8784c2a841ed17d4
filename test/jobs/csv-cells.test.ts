import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateCellRows, validateItems } from '../../src/batch/validate-items.js';
import { int, pick, type Random } from '../../src/fields/random.js';
import { NDJSON_ONLY } from '../../src/jobs/job-input.js';
import { batchResources } from '../../src/resources/index.js';
import { random } from '../../src/seed/generate.js';

/*
 * A CSV row whose header names only fields is checked on its cells (validateCellRows), never made into
 * an item: it must answer exactly what the batch check (validateItems) answers for the item those
 * cells make (extensions.md 12: every row by exactly the rules and messages of its batch endpoint).
 */

/** A cell as a file may hold it: a generated value, or a hostile one now and then. */
function cellText(rng: Random, generated: unknown): string {
  if (rng() < 0.7) return generated === null || generated === undefined ? '' : String(generated);
  return pick(rng, [
    '',
    '   ',
    ' padded ',
    'x'.repeat(int(rng, 1, 700)),
    'nul\u0000',
    'abc',
    'ñandú',
    '1e2',
    '-1',
    '0.123456789',
    '99999999999999999999',
    '12.5',
    '2024-13-01T00:00:00',
    '2024-02-29T23:59:59',
    '25:00',
    '08:30',
    'Y',
    'n',
    'maybe',
    'high',
    '😀',
  ]);
}

test('a row of cells: the values and problems of the item its cells make, for every CSV resource', () => {
  const rng = random(42);
  for (const resource of batchResources.filter((r) => !NDJSON_ONLY.has(r.name))) {
    for (let file = 0; file < 40; file++) {
      // Some fields not in the header at all, the others in any order.
      const header = resource.fieldNames.filter(() => rng() < 0.85).sort(() => rng() - 0.5);
      const byName = new Map(header.map((name, at) => [name, at]));
      const ofField = resource.fieldNames.map((name) => byName.get(name) ?? -1);
      const rows = Array.from({ length: int(rng, 1, 30) }, () =>
        header.map((name) => cellText(rng, resource.fields[name]!.generate(rng, 0))),
      );
      const items = rows.map((cells) => {
        const item: Record<string, string> = {};
        header.forEach((name, at) => {
          if (cells[at] !== '') item[name] = cells[at]!;
        });
        return item;
      });
      const everyItem = rng() < 0.5;
      assert.deepEqual(
        validateCellRows(resource, rows, ofField, everyItem),
        validateItems(resource, items, everyItem),
        `${resource.name}, file ${file}`,
      );
    }
  }
});
