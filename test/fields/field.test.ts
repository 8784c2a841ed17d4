import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { markUnknownReferences, referencedKeys } from '../../src/batch/references.js';
import { validateItems } from '../../src/batch/validate-items.js';
import { DATE_TIME_SQL_FORMAT } from '../../src/fields/date-time.js';
import {
  choice,
  dateTime,
  decimal,
  type Field,
  flag,
  integer,
  items,
  text,
  timeOfDay,
} from '../../src/fields/field.js';
import type { SchemaContext } from '../../src/fields/json-schema.js';
import { fieldMessages } from '../../src/fields/messages.js';
import { products } from '../../src/resources/products.js';
import { stocks } from '../../src/resources/stocks.js';
import { random } from '../../src/seed/generate.js';
import { missingReferences } from '../../src/sql/missing-references.js';
import { selectList } from '../../src/sql/select-list.js';

/*
 * Each field type describes itself: its JSON Schema, example, generator, select expression and column.
 * These are the unit checks of each; the OpenAPI document, the seeded data sets and the read side are
 * checked whole by their own suites (openapi, seed, read-customers).
 */

const CHILD = { $ref: '#/components/schemas/Child' };
const context = (direction: 'request' | 'response'): SchemaContext => ({
  direction,
  childSchema: () => CHILD,
});
const request = context('request');
const response = context('response');

const child = {
  line: integer({ min: 1, max: 1000, required: true }),
  code: text({ max: 20, required: true }),
};

/** One field of every kind, with what it must say of itself. */
const cases: {
  name: string;
  field: Field;
  request: unknown;
  response: unknown;
  example: unknown;
  select: string | undefined;
}[] = [
  {
    name: 'text',
    field: text({ max: 4, required: true }),
    request: { type: 'string', maxLength: 4, pattern: '\\S' },
    response: { type: 'string', maxLength: 4 },
    example: 'TEXT',
    select: 't."text"',
  },
  {
    name: 'choice',
    field: choice(['A', 'BB']),
    request: { type: 'string', enum: ['A', 'BB'] },
    response: { type: 'string', enum: ['A', 'BB'] },
    example: 'A',
    select: 't."choice"',
  },
  {
    name: 'flag',
    field: flag({ default: 'Y' }),
    request: { type: 'string', enum: ['Y', 'N'] },
    response: { type: 'string', enum: ['Y', 'N'] },
    example: 'Y',
    select: 't."flag"',
  },
  {
    name: 'time_of_day',
    field: timeOfDay(),
    request: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' },
    response: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' },
    example: '08:00',
    select: 't."time_of_day"',
  },
  {
    name: 'amount',
    field: decimal({ precision: 6, scale: 2 }),
    request: {
      oneOf: [
        { type: 'number', exclusiveMinimum: -10000, exclusiveMaximum: 10000 },
        {
          type: 'string',
          pattern: '^\\s*[+-]?(?:0*\\d{1,4}(?:\\.\\d{0,2}0*)?|\\.(?=\\d)\\d{0,2}0*)\\s*$',
        },
      ],
    },
    response: { type: 'number' },
    example: 1500.25,
    select: 't."amount"',
  },
  {
    name: 'count',
    field: integer({ min: 0, max: 99 }),
    request: {
      oneOf: [
        { type: 'integer', minimum: 0, maximum: 99 },
        { type: 'string', pattern: '^\\s*[+-]?(?:\\d+(?:\\.0*)?|\\.0+)\\s*$' },
      ],
    },
    response: { type: 'integer', minimum: 0, maximum: 99 },
    example: 1,
    select: 't."count"',
  },
  {
    name: 'at',
    field: dateTime(),
    request: {
      type: 'string',
      pattern: '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d$',
    },
    response: {
      type: 'string',
      pattern: '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d$',
    },
    example: '2026-01-10T08:00:00',
    select: `to_char(t."at", 'YYYY-MM-DD"T"HH24:MI:SS')`,
  },
  {
    name: 'items',
    field: items({ fields: child, key: 'line', maxItems: 3 }),
    request: { type: 'array', maxItems: 3, items: CHILD },
    response: { type: 'array', maxItems: 3, items: CHILD },
    example: [{ line: 1, code: 'CODE' }],
    select: undefined,
  },
];

describe('field types describe themselves', () => {
  for (const c of cases) {
    test(`${c.name}: JSON Schema of a request and of a response`, () => {
      assert.deepEqual(c.field.valueSchema(request), c.request);
      assert.deepEqual(c.field.valueSchema(response), c.response);
    });

    test(`${c.name}: its example`, () => {
      assert.deepEqual(c.field.example(c.name), c.example);
      if (!c.field.isColumn) return; // items are checked by the batch validator, not by check()
      const errors: string[] = [];
      c.field.check(c.example, errors);
      assert.deepEqual(errors, [], 'the service accepts its own example');
    });

    test(`${c.name}: its select expression`, () => {
      assert.equal(c.field.selectExpression(`t."${c.name}"`), c.select);
    });

    test(`${c.name}: its generated values are accepted and depend only on the generator`, () => {
      const at = Date.UTC(2024, 0, 1);
      const first = random(42);
      const again = random(42);
      for (let n = 0; n < 200; n++) {
        const value = c.field.generate(first, at);
        assert.deepEqual(c.field.generate(again, at), value, 'same draws, same value');
        if (!c.field.isColumn) continue;
        const errors: string[] = [];
        c.field.check(value, errors);
        assert.deepEqual(errors, [], `${JSON.stringify(value)} is accepted`);
      }
    });
  }

  test('notes, default notes and extensions the document adds to the schema', () => {
    const amount = decimal({ precision: 1, scale: 0, min: 0, max: 6 });
    assert.equal(
      amount.typeNote('request'),
      'Decimal(1,0): a JSON number or a numeric string such as "12.50" (no exponent, no thousands separator), ' +
        'at most 1 integer digits and 0 decimal places, from 0 to 6',
    );
    assert.equal(amount.typeNote('response'), 'Decimal(1,0), a JSON number with every stored digit');
    assert.deepEqual(amount.schemaExtensions(), { 'x-precision': 1, 'x-scale': 0 });
    assert.equal(integer({ min: 1, max: 9 }).typeNote('response'), '');
    assert.equal(flag({ default: 'Y' }).defaultNote(), 'default "Y"');
    assert.equal(text({ max: 3 }).defaultNote(), '');
    assert.equal(items({ fields: child, key: 'line', maxItems: 3 }).defaultNote(), '', 'the schema says []');
  });

  test('the column each type is stored in', () => {
    assert.deepEqual(text({ max: 7 }).columnType, {
      data_type: 'character varying',
      character_maximum_length: 7,
    });
    assert.deepEqual(timeOfDay().columnType, { data_type: 'character varying', character_maximum_length: 5 });
    assert.deepEqual(decimal({ precision: 18, scale: 2 }).columnType, {
      data_type: 'numeric',
      numeric_precision: 18,
      numeric_scale: 2,
    });
    assert.deepEqual(dateTime().columnType, { data_type: 'timestamp without time zone' });
    assert.equal(items({ fields: child, key: 'line', maxItems: 3 }).columnType, undefined);
  });

  test('selectList keeps its shape: plain columns, DateTime as text under its own name, no items', () => {
    const table = {
      code: text({ max: 4 }),
      at: dateTime(),
      lines: items({ fields: child, key: 'line', maxItems: 1 }),
    };
    assert.equal(selectList(table, 'c'), `c."code", to_char(c."at", ${DATE_TIME_SQL_FORMAT}) AS "at"`);
  });
});

describe('references to another resource', () => {
  test('stocks refer to the products by their code, with the product message', () => {
    const reference = stocks.reference!;
    assert.equal(reference.name, 'product_code');
    assert.equal(reference.position, stocks.fieldNames.indexOf('product_code'));
    assert.equal(reference.table, products.table);
    assert.equal(reference.column, 'code');
    assert.equal(reference.message, fieldMessages.unknownProduct);
    assert.equal(products.reference, undefined);
  });

  test('the missing-keys query of a reference asks its table and key column', async () => {
    const asked: unknown[][] = [];
    const q = {
      async query<Row>(text: string, params?: readonly unknown[]) {
        asked.push([text, ...(params ?? [])]);
        return [{ code: 'P9' }] as Row[];
      },
      async exec() {},
    };
    const missing = await missingReferences(q, stocks.reference!, 7, ['P1', 'P9']);
    assert.deepEqual([...missing], ['P9']);
    assert.match(String(asked[0]![0]), /FROM "products" p WHERE p\.tenant_id = \$1 AND p\."code" = c\.code/);
    assert.deepEqual(asked[0]!.slice(1), [7, ['P1', 'P9']]);
  });

  test('unknown keys are named on their items, distinct keys asked once', () => {
    const batch = validateItems(stocks, [
      { product_code: 'P1', location: 'L1' },
      { product_code: 'P2', location: 'L1' },
      { product_code: 'P2', location: 'L2' },
    ]);
    assert.deepEqual(referencedKeys(stocks, batch), ['P1', 'P2']);
    markUnknownReferences(stocks, batch, new Set(['P2']));
    assert.deepEqual(batch.errors, [
      {
        index: 1,
        errors: [{ field: 'product_code', message: 'Product does not exist in the product master' }],
      },
      {
        index: 2,
        errors: [{ field: 'product_code', message: 'Product does not exist in the product master' }],
      },
    ]);
  });
});

describe('validation after a field check that threw', () => {
  test('a problem pushed before the throw is not put on the next batch', () => {
    // A check with a bug: it reports a problem, then throws (a ValidationCrash for its batch).
    const crashing = Object.assign(Object.create(text({ max: 5 })) as Field, {
      check(_value: unknown, problems: string[]) {
        problems.push('half-reported problem');
        throw new Error('bug in a field check');
      },
    });
    assert.throws(
      () => validateItems({ fields: { code: crashing } }, [{ code: 'A' }]),
      /bug in a field check/,
    );
    const next = validateItems(stocks, [{ product_code: 'P1', location: 'L1' }]);
    assert.deepEqual(next.errors, []);
    assert.ok(next.rows[0]);
  });
});
