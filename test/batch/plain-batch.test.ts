import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NO_OPTIONS } from '../../src/batch/batch-options.js';
import { type CheckedBatch, checkBatch, checkItems } from '../../src/batch/check-block.js';
import { ByteKeySet, MAX_PROBES } from '../../src/batch/plain/byte-key-set.js';
import { checkPlainBatch, scanPlainBatch } from '../../src/batch/plain/plain-batch.js';
import { ChoiceField } from '../../src/fields/choice.js';
import { DecimalField } from '../../src/fields/decimal.js';
import { parseJsonBytes } from '../../src/fields/json-text.js';
import { int, pick, type Random } from '../../src/fields/random.js';
import { TextField } from '../../src/fields/text.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { prices } from '../../src/resources/prices.js';
import { random } from '../../src/seed/generate.js';

/*
 * The check on bytes (src/batch/plain/plain-batch.ts) against the general one (checkItems on the parsed
 * body): on every body it answers, the same checked batch, to the last literal; on every body it
 * cannot be sure of, no answer. Bodies are generated with plain and hostile values alike.
 */

/** The general path's answer, or 'invalidJson' / the array rule when it refuses the body. */
async function general(resource: BatchResource, body: Buffer, rows: number): Promise<CheckedBatch | string> {
  let items: unknown;
  try {
    items = parseJsonBytes(body);
  } catch {
    return 'invalidJson';
  }
  if (!Array.isArray(items) || items.length === 0) return 'array rule';
  return checkItems(resource, items, rows, NO_OPTIONS);
}

/** JSON white space, often none. */
const ws = (rng: Random) => (rng() < 0.7 ? '' : pick(rng, [' ', '\n', '\t', '\r\n', '  ']));

/** A number's text as a client may write it, plain or not. */
function numberText(rng: Random, field: DecimalField, plain: boolean): string {
  const integer = String(int(rng, 0, 10 ** Math.min(field.precision - field.scale, 5) - 1));
  const fraction = pick(
    rng,
    ['', '.5', '.25', '.05', '.1'].filter((f) => f.length <= field.scale + 1),
  );
  if (plain) return `${rng() < 0.1 ? '-' : ''}${integer}${fraction}`;
  return pick(rng, [
    `${integer}.50`,
    `${integer}.0`,
    '-0',
    '-0.0',
    '0.000',
    '1e2',
    '1.5E-3',
    `0${integer}`,
    '12345678901234567',
    '1234567890123.45',
    '0.0000001',
    '0.123',
    '-',
    '1.',
    '.5',
    '99999999999999999.99',
    `"${integer}${fraction}"`,
    `" ${integer}"`,
    'true',
    'null',
    '[]',
    '{}',
  ]);
}

/** A string's JSON text for a text or choice field, plain or not. */
function stringText(rng: Random, value: string, plain: boolean): string {
  if (plain) return JSON.stringify(value);
  return pick(rng, [
    JSON.stringify(`${value}"quoted"`),
    JSON.stringify(`${value}\\`),
    JSON.stringify(`ñandú ${value}`),
    JSON.stringify(`${value}\n`),
    JSON.stringify(` ${value}`),
    JSON.stringify('   '),
    JSON.stringify(''),
    JSON.stringify('x'.repeat(300)),
    JSON.stringify('\u0000'),
    '"\\u0041bc"',
    '"\\ud800"',
    '42',
    'null',
    'false',
    '"unterminated',
    JSON.stringify(value.toLowerCase()),
  ]);
}

/** One item's JSON text: the resource's fields in some order, some left out, at most one value hostile. */
function itemText(resource: BatchResource, rng: Random, at: number, plainness: number): string {
  const members: string[] = [];
  const hostileAt = rng() < plainness ? -1 : int(rng, 0, resource.fieldNames.length);
  resource.fieldNames.forEach((name, f) => {
    const field = resource.fieldList[f]!;
    const plain = f !== hostileAt;
    if (plain && !field.required && rng() < 0.3) {
      if (rng() < 0.5) members.push(`"${name}":${pick(rng, ['null', '""'])}`);
      return;
    }
    let value: string;
    if (field instanceof DecimalField) value = numberText(rng, field, plain);
    else if (field instanceof ChoiceField || field instanceof TextField) {
      const generated = String(field.generate(rng));
      // A run of 16 digits in a plain string makes the general path parse losslessly (json-text.ts).
      const digits =
        field instanceof TextField && field.max >= 16 && rng() < 0.05 ? '1234567890123456' : generated;
      // Keys unique per item, so that a batch of plain items has no repeated key.
      const keyed = resource.key.includes(name) ? `${name === resource.key[0] ? `K${at}` : 'L1'}` : digits;
      value = stringText(rng, field instanceof ChoiceField ? generated : keyed, plain);
    } else value = JSON.stringify(field.generate(rng, 0));
    members.push(`"${name}"${ws(rng)}:${ws(rng)}${value}`);
  });
  if (rng() > plainness) {
    members.push(pick(rng, ['"unknown":1', `"${resource.fieldNames[0]}":"again"`, '"__proto__":{}']));
  }
  // Shuffled now and then: clients name fields in any order.
  if (rng() < 0.2) members.sort(() => rng() - 0.5);
  return `{${ws(rng)}${members.join(`${ws(rng)},${ws(rng)}`)}${ws(rng)}}`;
}

function bodyText(resource: BatchResource, rng: Random, plainness: number): string {
  const count = int(rng, 1, 12);
  const items = Array.from({ length: count }, (_, at) => itemText(resource, rng, at, plainness));
  // A repeated item now and then: its key repeats.
  if (rng() > plainness) items.push(items[0]!);
  let text = `${ws(rng)}[${ws(rng)}${items.join(`${ws(rng)},${ws(rng)}`)}${ws(rng)}]${ws(rng)}`;
  if (rng() > plainness) {
    text = pick(rng, [
      text.slice(0, -2),
      `${text}x`,
      `${text},`,
      text.replace('[', '{'),
      '[]',
      `\ufeff${text}`,
    ]);
  }
  return text;
}

/** The resources the check on bytes takes: fields of text, choices and decimals without bounds only. */
function isPlainResource(resource: BatchResource): boolean {
  return resource.fieldList.every(
    (field) =>
      (field.defaultValue === null || typeof field.defaultValue === 'string') &&
      (field instanceof ChoiceField ||
        (field instanceof TextField && field.kind === 'text') ||
        (field instanceof DecimalField && field.min === undefined && field.max === undefined)),
  );
}

const plainResources = batchResources.filter(isPlainResource);

describe('the check on bytes answers as the general check, or not at all', () => {
  test('the resources it takes include prices, stocks and products; not those with other field types', () => {
    const names = plainResources.map((resource) => resource.name);
    for (const name of ['prices', 'stocks', 'products']) assert.ok(names.includes(name), names.join(', '));
    assert.ok(!names.includes('customers') && !names.includes('deliveries'), names.join(', '));
  });

  for (const resource of plainResources) {
    test(`${resource.name}: generated bodies, plain and hostile`, async () => {
      const rng = random(resource.name.length * 7919);
      let answered = 0;
      let plainAnswered = 0;
      let plainBodies = 0;
      for (let n = 0; n < 600; n++) {
        const plainness = n % 2 === 0 ? 1 : 0.8;
        const body = Buffer.from(bodyText(resource, rng, plainness));
        const rows = pick(rng, [Number.POSITIVE_INFINITY, 2_000, 3, 1]);
        // The variant that throws: a crash must fail the test, not pass as a refusal.
        const fast = scanPlainBatch(resource, body, rows);
        const expected = await general(resource, body, rows);
        if (plainness === 1) plainBodies++;
        if (fast === undefined) continue;
        answered++;
        if (plainness === 1) plainAnswered++;
        assert.notEqual(typeof expected, 'string', `answered a body the general path refuses: ${body}`);
        assert.deepStrictEqual(fast, expected, body.toString());
        assert.equal((expected as CheckedBatch).errors.length, 0);
      }
      // Plain bodies (every value plain, the odd item without an optional field) are taken.
      assert.ok(plainAnswered > plainBodies * 0.9, `${plainAnswered} of ${plainBodies} plain bodies`);
      assert.ok(answered < 600, 'hostile bodies go to the general path');
    });
  }

  test('checkBatch takes it for a plain body, not with outcomes or on_invalid=skip', async () => {
    const body = Buffer.from(
      JSON.stringify(
        Array.from({ length: 1_000 }, (_, at) => ({
          product_code: `P${at}`,
          price_list: 'C1',
          price: (1_000 + at * 37) / 100,
          maximum_discount: 10,
          factor_description: 'UND',
        })),
      ),
    );
    const fast = checkPlainBatch(prices, body, 300);
    assert.ok(fast);
    assert.equal(fast.write?.chunks.length, 4, 'statements of at most 300 rows');
    assert.deepStrictEqual(await checkBatch(prices, body, 300, NO_OPTIONS), fast);
    assert.deepStrictEqual(fast, await general(prices, body, 300));
    const withOutcomes = await checkBatch(prices, body, 300, { ...NO_OPTIONS, outcomes: true });
    assert.equal(withOutcomes.keyTexts?.length, 1_000, 'outcomes need the keys as sent: the general path');
  });

  test('values at the edge of their field: the longest text, the most digits', () => {
    const item = {
      product_code: 'P'.repeat(20),
      price_list: 'L'.repeat(20),
      price: 1,
      maximum_discount: 99_999_999.99,
    };
    const field = prices.fieldList[prices.fieldNames.indexOf('maximum_discount')] as DecimalField;
    assert.equal(
      field.precision - field.scale,
      8,
      'the discount above has as many integer digits as allowed',
    );
    const body = (changed: object) => Buffer.from(JSON.stringify([{ ...item, ...changed }]));
    const taken = checkPlainBatch(prices, body({}), 10);
    assert.ok(taken);
    assert.equal(taken.write?.chunks[0]?.[prices.fieldNames.indexOf('maximum_discount')], '{"99999999.99"}');
    assert.equal(checkPlainBatch(prices, body({ price_list: 'L'.repeat(21) }), 10), undefined);
    assert.equal(checkPlainBatch(prices, body({ maximum_discount: 999_999_999 }), 10), undefined);
    assert.equal(checkPlainBatch(prices, body({ maximum_discount: 1.255 }), 10), undefined);
  });

  test('keys made to collide in the key set give up after a few probes: the general path takes the body', () => {
    // With a seed the test knows (the process draws its own), find keys of one slot by brute force.
    const seed = 0x811c9dc5 | 0;
    const slotOf = (key: Buffer) => {
      let hash = seed;
      for (const byte of key) hash = Math.imul(hash ^ byte, 0x01000193);
      return hash & 32_767;
    };
    const colliding: Buffer[] = [];
    const target = slotOf(Buffer.from('K0'));
    for (let n = 0; colliding.length < MAX_PROBES + 2; n++) {
      const key = Buffer.from(`K${n}`);
      if (slotOf(key) === target) colliding.push(key);
    }
    const body = Buffer.concat(colliding);
    const set = new ByteKeySet(seed);
    set.clear(body);
    let at = 0;
    const added = colliding.map((key) => {
      const result = set.add(at, at + key.length);
      at += key.length;
      return result;
    });
    assert.deepEqual(added.slice(0, MAX_PROBES), new Array(MAX_PROBES).fill(true));
    assert.equal(added[MAX_PROBES], undefined, 'past the probes: neither new nor repeated');
    // A repeated key is still found among the ones that fit.
    set.clear(Buffer.concat([colliding[0]!, colliding[0]!]));
    assert.equal(set.add(0, colliding[0]!.length), true);
    assert.equal(set.add(colliding[0]!.length, 2 * colliding[0]!.length), false);
  });

  test("statements of a whole number of rows only: any other count is the general path's", () => {
    const body = Buffer.from(JSON.stringify([{ product_code: 'P1', price_list: 'L1', price: 1 }]));
    for (const rows of [0, -1, 2.5, Number.NaN]) assert.equal(checkPlainBatch(prices, body, rows), undefined);
    assert.ok(checkPlainBatch(prices, body, 1));
  });
});
