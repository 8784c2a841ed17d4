import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChoiceField, DecimalField, Field, TextField } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { appForNewTenant, seedProducts } from '../helpers/app.js';
import { backends } from '../helpers/backends.js';
import { batchEndpoint } from '../helpers/batch-items.js';
import { countRows, MISSING, num, toJson } from '../helpers/batch-json.js';

/*
 * Every field of every batch endpoint, checked against the field tables of the spec: backoffice-api.md
 * sections 4.4 to 4.9 and 7.1, and extensions.md section 3 for products. The tables below are copied by
 * hand from the spec (never derived from src), and every expected message is the spec's, word for word.
 */

type SpecField =
  | { type: 'String'; required: boolean; max: number; product?: true }
  | {
      type: 'Decimal';
      required: boolean;
      precision: number;
      scale: number;
      range?: readonly [number, number];
    }
  | { type: 'Integer'; required: boolean }
  | { type: 'Choice'; required: boolean; values: readonly string[]; default: string };

interface SpecEndpoint {
  readonly path: string;
  readonly message: string;
  readonly key: readonly string[];
  readonly existing: 'ignore' | 'update';
  readonly fields: Readonly<Record<string, SpecField>>;
}

const SPEC: Readonly<Record<string, SpecEndpoint>> = {
  // backoffice-api.md 4.4
  stocks: {
    path: '/api/stocks/batch-create',
    message: 'Stocks created successfully',
    key: ['product_code', 'location'],
    existing: 'ignore',
    fields: {
      product_code: { type: 'String', required: true, max: 20, product: true },
      location: { type: 'String', required: true, max: 20 },
      quantity: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      factor_description: { type: 'String', required: false, max: 20 },
    },
  },
  // backoffice-api.md 4.5
  'payment-methods': {
    path: '/api/payment-methods/batch-create',
    message: 'Payment methods created successfully',
    key: ['code'],
    existing: 'ignore',
    fields: {
      code: { type: 'String', required: true, max: 10 },
      description: { type: 'String', required: true, max: 50 },
      type: { type: 'String', required: false, max: 1 },
    },
  },
  // backoffice-api.md 4.6
  factors: {
    path: '/api/factors/batch-create',
    message: 'Factors created successfully',
    key: ['product_code', 'unit'],
    existing: 'ignore',
    fields: {
      product_code: { type: 'String', required: true, max: 20, product: true },
      unit: { type: 'Decimal', required: true, precision: 18, scale: 2 },
      description: { type: 'String', required: true, max: 20 },
      volume: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      weight: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      minimum_sale: { type: 'Decimal', required: false, precision: 18, scale: 2 },
    },
  },
  // backoffice-api.md 4.7 (day: weekday, 1 = Monday to 7 = Sunday)
  routes: {
    path: '/api/routes/batch-create',
    message: 'Routes created successfully',
    key: ['client_code', 'seller_code', 'day'],
    existing: 'ignore',
    fields: {
      client_code: { type: 'String', required: true, max: 18 },
      seller_code: { type: 'String', required: true, max: 18 },
      day: { type: 'Decimal', required: true, precision: 1, scale: 0, range: [1, 7] },
      frequency: { type: 'Integer', required: true },
      sequence: { type: 'Integer', required: false },
    },
  },
  // backoffice-api.md 4.8
  users: {
    path: '/api/users/batch-create',
    message: 'Users created successfully',
    key: ['code'],
    existing: 'ignore',
    fields: {
      code: { type: 'String', required: true, max: 18 },
      name: { type: 'String', required: true, max: 50 },
      type: { type: 'String', required: true, max: 30 },
      phone: { type: 'String', required: true, max: 20 },
      address: { type: 'String', required: true, max: 300 },
      email: { type: 'String', required: false, max: 50 },
      city: { type: 'String', required: false, max: 50 },
      country: { type: 'String', required: false, max: 50 },
      region: { type: 'String', required: false, max: 50 },
      location: { type: 'String', required: false, max: 20 },
      cedula: { type: 'String', required: false, max: 18 },
      operation_center: { type: 'String', required: false, max: 10 },
    },
  },
  // backoffice-api.md 4.9
  prices: {
    path: '/api/prices/batch-create',
    message: 'Prices created successfully',
    key: ['product_code', 'price_list'],
    existing: 'update',
    fields: {
      product_code: { type: 'String', required: true, max: 20, product: true },
      price_list: { type: 'String', required: true, max: 20 },
      price: { type: 'Decimal', required: true, precision: 18, scale: 2 },
      maximum_discount: { type: 'Decimal', required: false, precision: 10, scale: 2 },
      maximum_discount2: { type: 'Decimal', required: false, precision: 10, scale: 2 },
      maximum_discount3: { type: 'Decimal', required: false, precision: 10, scale: 2 },
      base_price: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      minimum_price: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      maximum_price: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      charges: { type: 'Decimal', required: false, precision: 18, scale: 2 },
      factor_description: { type: 'String', required: false, max: 20 },
    },
  },
  // extensions.md 3
  products: {
    path: '/api/products/batch-create',
    message: 'Products created successfully',
    key: ['code'],
    existing: 'update',
    fields: {
      code: { type: 'String', required: true, max: 20 },
      description: { type: 'String', required: true, max: 100 },
      unit: { type: 'String', required: false, max: 20 },
      tax: { type: 'Decimal', required: false, precision: 5, scale: 2 },
      state: { type: 'Choice', required: false, values: ['Y', 'N'], default: 'Y' },
    },
  },
};

/** One code point, two UTF-16 units, four UTF-8 bytes. */
const EMOJI = '😀';

const REQUIRED = 'Field is required';
const MUST_BE_STRING = 'Field must be a string';
const MUST_BE_INTEGER = 'Field must be of type integer';
const MUST_BE_DECIMAL = 'Field must be of type decimal';
const INVALID_DECIMAL = 'Field must be a valid decimal (e.g., 1.5, 10.25)';
const UNKNOWN_FIELD = 'Unknown field';
const NOT_AN_OBJECT = 'Item must be an object';
const maxLength = (x: number) => `Field exceeds maximum length of ${x} characters`;
const maxIntegerDigits = (x: number) => `Field exceeds maximum of ${x} integer digits`;
const maxDecimalPlaces = (x: number) => `Field exceeds maximum of ${x} decimal places`;

interface Accepted {
  field: string;
  value: unknown;
  /** The value read back as text (column::text); undefined when not checked. */
  stored?: string;
}

/** exact: these messages and no other; includes: at least these; any: rejected, message not in the spec. */
type Match = 'exact' | 'includes' | 'any';

interface Rejected {
  field: string;
  value: unknown;
  messages: readonly string[];
  match: Match;
}

/** A decimal text with exactly scale fraction digits, as PostgreSQL shows numeric(p, scale). */
const atScale = (integer: string, fraction: string, scale: number) =>
  scale === 0 ? integer : `${integer}.${fraction.padEnd(scale, '0')}`;

function acceptedValues(field: string, spec: SpecField): Accepted[] {
  const optional: Accepted[] = spec.required
    ? []
    : [
        { field, value: null },
        { field, value: MISSING },
      ];
  switch (spec.type) {
    case 'String': {
      const { max } = spec;
      return [
        { field, value: 'x'.repeat(max), stored: 'x'.repeat(max) },
        { field, value: EMOJI.repeat(max), stored: EMOJI.repeat(max) },
        // max code points in max + 1 UTF-16 units
        { field, value: 'x'.repeat(max - 1) + EMOJI, stored: 'x'.repeat(max - 1) + EMOJI },
        ...optional,
      ];
    }
    case 'Decimal': {
      const { precision, scale, range } = spec;
      if (range) {
        const [low, high] = range;
        return [
          { field, value: num(String(low)), stored: String(low) },
          { field, value: num(String(high)), stored: String(high) },
          { field, value: String(high), stored: String(high) },
          ...optional,
        ];
      }
      const integerDigits = precision - scale;
      const largest = atScale('9'.repeat(integerDigits), '9'.repeat(scale), scale);
      const allNines = '9'.repeat(precision);
      const exponentForm = `${allNines[0]}.${allNines.slice(1)}e${integerDigits - 1}`;
      const smallest = atScale('0', `${'0'.repeat(scale - 1)}1`, scale);
      return [
        { field, value: num(largest), stored: largest },
        { field, value: largest, stored: largest },
        { field, value: num(`-${largest}`), stored: `-${largest}` },
        { field, value: `-${largest}`, stored: `-${largest}` },
        { field, value: num(exponentForm), stored: largest },
        { field, value: num(smallest), stored: smallest },
        { field, value: smallest, stored: smallest },
        { field, value: num('1.5e1'), stored: atScale('15', '', scale) },
        { field, value: '00012.5', stored: atScale('12', '5', scale) },
        { field, value: num('0'), stored: atScale('0', '', scale) },
        ...optional,
      ];
    }
    case 'Integer':
      return [
        { field, value: num('1'), stored: '1' },
        { field, value: num('2147483647'), stored: '2147483647' },
        ...optional,
      ];
    case 'Choice':
      return [...spec.values.map((value) => ({ field, value, stored: value })), ...optional];
  }
}

function rejectedValues(field: string, spec: SpecField): Rejected[] {
  const cases: Rejected[] = [];
  const add = (values: readonly unknown[], messages: readonly string[], match: Match = 'exact') => {
    for (const value of values) cases.push({ field, value, messages, match });
  };
  if (spec.required) add([MISSING, null, '', '   ', '\t\n ', '\u00a0\u3000'], [REQUIRED]);
  switch (spec.type) {
    case 'String': {
      const { max } = spec;
      add(['x'.repeat(max + 1), EMOJI.repeat(max + 1), 'x'.repeat(max) + EMOJI], [maxLength(max)]);
      add([num('5'), num('1.5'), true, false, {}, [], ['x'], { a: 'x' }], [MUST_BE_STRING]);
      break;
    }
    case 'Decimal': {
      const { precision, scale, range } = spec;
      const integerDigits = precision - scale;
      add([true, false, {}, [], [num('1')], { value: num('1') }], [MUST_BE_DECIMAL]);
      add(['abc', '1,5', '1.2.3', '1.5x', '--1', '1 000', '١٢'], [INVALID_DECIMAL]);
      if (range) {
        const [low, high] = range;
        add(
          [num(String(low - 1)), num(String(high + 1)), String(high + 1), num('-1')],
          [`Field must be between ${low} and ${high}`],
        );
        add([num('10'), '10'], [maxIntegerDigits(integerDigits)], 'includes');
        add([num('1.5'), '1.5', num('7.25')], [maxDecimalPlaces(scale)], 'includes');
        break;
      }
      const tooLong = `1${'0'.repeat(integerDigits)}`;
      add(
        [num(tooLong), tooLong, num(`-${tooLong}`), `-${tooLong}`, num(`1e${integerDigits}`), num('1e400')],
        [maxIntegerDigits(integerDigits)],
      );
      const tooFine = `0.${'0'.repeat(scale)}1`;
      add(
        [num(tooFine), tooFine, num(`-${tooFine}`), num(`1e-${scale + 1}`), num('1e-400')],
        [maxDecimalPlaces(scale)],
      );
      const both = `${'9'.repeat(integerDigits + 1)}.${'9'.repeat(scale + 1)}`;
      add([num(both), both], [maxIntegerDigits(integerDigits), maxDecimalPlaces(scale)]);
      break;
    }
    case 'Integer':
      add([num('1.5'), '1.5', 'x', true, false, {}, [], [num('1')]], [MUST_BE_INTEGER]);
      add([num('2147483648')], [], 'any');
      break;
    case 'Choice':
      add(['y', 'n', 'YES', 'X'], [], 'any');
      add([num('5'), true], [MUST_BE_STRING]);
      break;
  }
  return cases;
}

/** A value that is wrong for the field, to make every field of one item wrong at once. */
function wrongValue(spec: SpecField): { value: unknown; message: string } {
  switch (spec.type) {
    case 'String':
      return { value: 'x'.repeat(spec.max + 1), message: maxLength(spec.max) };
    case 'Decimal':
      return { value: 'abc', message: INVALID_DECIMAL };
    case 'Integer':
      return { value: true, message: MUST_BE_INTEGER };
    case 'Choice':
      return { value: num('5'), message: MUST_BE_STRING };
  }
}

/**
 * The src field as a spec table row, to compare the two tables: by the field's kind, since the spec
 * names its own types (a kind the spec has no type for is reported, not guessed).
 */
function specOf(field: Field): SpecField | string {
  switch (field.kind) {
    case 'choice': {
      const choice = field as ChoiceField;
      return {
        type: 'Choice',
        required: choice.required,
        values: [...choice.values],
        default: choice.defaultValue as string,
      };
    }
    case 'text': {
      const text = field as TextField;
      const { required, max } = text;
      // The spec says "must exist in the product master": a reference to the products' code.
      const toProducts = text.references?.resource().name === 'products' && text.references.field === 'code';
      return toProducts
        ? { type: 'String', required, max, product: true }
        : { type: 'String', required, max };
    }
    case 'decimal': {
      const decimal = field as DecimalField;
      const base = {
        type: 'Decimal' as const,
        required: decimal.required,
        precision: decimal.precision,
        scale: decimal.scale,
      };
      return decimal.min === undefined && decimal.max === undefined
        ? base
        : {
            ...base,
            range: [decimal.min ?? Number.NEGATIVE_INFINITY, decimal.max ?? Number.POSITIVE_INFINITY],
          };
    }
    case 'integer':
      return { type: 'Integer', required: field.required };
    default:
      return `a ${field.kind} field, which the spec has no type for`;
  }
}

function resourceAt(path: string): BatchResource {
  const resource = batchResources.find((r) => r.path === path);
  assert.ok(resource, `${path} is one of batchResources`);
  return resource;
}

interface ExpectedItem {
  label: string;
  match: Match;
  /** The field every error must name (includes and any). */
  field: string | null;
  errors: { field: string | null; message: string }[];
}

const byText = (a: unknown, b: unknown) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);

function checkItemErrors(actual: unknown, expected: ReadonlyMap<number, ExpectedItem>): void {
  assert.ok(Array.isArray(actual), 'errors is an array');
  const seen = new Set<number>();
  for (const element of actual as { index: unknown; errors: { field: unknown; message: unknown }[] }[]) {
    assert.deepEqual(Object.keys(element).sort(), ['errors', 'index'], JSON.stringify(element));
    assert.ok(Number.isInteger(element.index), `index is an integer: ${JSON.stringify(element)}`);
    const index = element.index as number;
    assert.ok(!seen.has(index), `one element per invalid item (index ${index} twice)`);
    seen.add(index);
    const want = expected.get(index);
    assert.ok(want, `item ${index} is valid, yet reported: ${JSON.stringify(element)}`);
    const got = element.errors;
    const context = `item ${index} (${want.label}): got ${JSON.stringify(got)}`;
    assert.ok(Array.isArray(got) && got.length > 0, context);
    for (const error of got) {
      assert.deepEqual(Object.keys(error).sort(), ['field', 'message'], context);
      assert.equal(typeof error.message, 'string', context);
    }
    if (want.match === 'exact') {
      assert.deepEqual([...got].sort(byText), [...want.errors].sort(byText), context);
    } else {
      for (const error of got) assert.equal(error.field, want.field, context);
      for (const error of want.errors)
        assert.ok(
          got.some((g) => g.message === error.message),
          context,
        );
    }
  }
  const missing = [...expected.keys()].filter((index) => !seen.has(index));
  assert.deepEqual(
    missing.map((index) => `${index}: ${expected.get(index)!.label}`),
    [],
    'every invalid item is reported',
  );
}

/** Short description of a value for failure messages. */
function describeValue(value: unknown): string {
  if (value === MISSING) return 'missing';
  const text = toJson(value);
  return text.length > 40 ? `${text.slice(0, 37)}... (${[...String(value)].length} chars)` : text;
}

test('the batch endpoints of the spec are all served', () => {
  const served = new Set(batchResources.map((r) => r.path));
  for (const spec of Object.values(SPEC)) assert.ok(served.has(spec.path), spec.path);
});

describe('src field tables equal the spec field tables', () => {
  for (const [name, spec] of Object.entries(SPEC)) {
    test(name, () => {
      const resource = resourceAt(spec.path);
      assert.equal(resource.message, spec.message, 'success message');
      assert.deepEqual(resource.key, spec.key, 'uniqueness key');
      assert.equal(resource.onExisting, spec.existing, 'existing keys ignored or updated');
      const src = Object.fromEntries(Object.entries(resource.fields).map(([field, f]) => [field, specOf(f)]));
      assert.deepEqual(src, spec.fields);
    });
  }
});

for (const backend of backends()) {
  describe(`batch fields on ${backend.name}`, () => {
    for (const [name, spec] of Object.entries(SPEC)) {
      const { valid } = batchEndpoint(name);
      const fields = Object.entries(spec.fields);
      const productCodes = fields.flatMap(([field, f]) =>
        f.type === 'String' && f.product
          ? acceptedValues(field, f).flatMap((c) => (typeof c.value === 'string' ? [c.value] : []))
          : [],
      );

      test(`${name}: values at the limits are accepted and stored as sent`, async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        if (productCodes.length > 0) await seedProducts(tenant, ['P1', ...productCodes]);
        const cases = fields.flatMap(([field, f]) => acceptedValues(field, f));
        const items = cases.map((c, n) => ({ ...valid(n), [c.field]: c.value }));
        const response = await tenant.post(spec.path, toJson(items));
        assert.equal(response.status, 201, JSON.stringify(response.body).slice(0, 2000));
        assert.equal(response.body.statusCode, 201);
        assert.equal(response.body.message, spec.message);
        const { created, updated, ignored } = response.body;
        assert.equal(created + updated + ignored, items.length, 'every item counted once');

        const table = resourceAt(spec.path).table;
        for (const [field] of fields) {
          const wanted = cases.filter((c) => c.field === field && c.stored !== undefined);
          if (wanted.length === 0) continue;
          const rows = await db.query<{ v: string | null }>(
            `SELECT "${field}"::text AS v FROM ${table} WHERE tenant_id = $1`,
            [tenant.tenant.tenantId],
          );
          const stored = new Set(rows.map((row) => row.v));
          for (const c of wanted) {
            assert.ok(stored.has(c.stored!), `${field} = ${describeValue(c.value)} is stored as ${c.stored}`);
          }
        }
      });

      test(`${name}: every invalid item is reported once, with every problem, and nothing is written`, async () => {
        const db = await backend.db();
        const tenant = await appForNewTenant(db);
        if (productCodes.length > 0) await seedProducts(tenant, ['P1']);
        const table = resourceAt(spec.path).table;
        const before = await countRows(db, table, tenant.tenant.tenantId);

        const items: unknown[] = [];
        const expected = new Map<number, ExpectedItem>();
        let serial = 0;
        const invalid = (item: unknown, want: ExpectedItem) => {
          expected.set(items.length, want);
          items.push(item);
          // A valid item after every few invalid ones: it must not be reported.
          if (items.length % 4 === 3) items.push(valid(serial++));
        };

        for (const [field, f] of fields) {
          for (const c of rejectedValues(field, f)) {
            invalid(
              { ...valid(serial++), [field]: c.value },
              {
                label: `${field} = ${describeValue(c.value)}`,
                match: c.match,
                field,
                errors: c.messages.map((message) => ({ field, message })),
              },
            );
          }
        }

        // Several problems at once: every field wrong, plus two unknown fields.
        const allWrong: Record<string, unknown> = {};
        const allWrongErrors: ExpectedItem['errors'] = [];
        for (const [field, f] of fields) {
          const wrong = wrongValue(f);
          allWrong[field] = wrong.value;
          allWrongErrors.push({ field, message: wrong.message });
        }
        allWrong['zzz'] = 1;
        allWrong['ZZZ'] = null;
        allWrongErrors.push(
          { field: 'zzz', message: UNKNOWN_FIELD },
          { field: 'ZZZ', message: UNKNOWN_FIELD },
        );
        invalid(allWrong, {
          label: 'every field wrong',
          match: 'exact',
          field: null,
          errors: allWrongErrors,
        });

        const required = fields.filter(([, f]) => f.required).map(([field]) => field);
        invalid(
          {},
          {
            label: 'empty object',
            match: 'exact',
            field: null,
            errors: required.map((field) => ({ field, message: REQUIRED })),
          },
        );
        const firstRequired = required[0]!;
        const { [firstRequired]: _dropped, ...withoutFirst } = valid(serial++);
        invalid(
          { ...withoutFirst, extra: 'x', [firstRequired.toUpperCase()]: 'x' },
          {
            label: `${firstRequired} missing, two unknown fields`,
            match: 'exact',
            field: null,
            errors: [
              { field: firstRequired, message: REQUIRED },
              { field: 'extra', message: UNKNOWN_FIELD },
              { field: firstRequired.toUpperCase(), message: UNKNOWN_FIELD },
            ],
          },
        );
        for (const key of ['extra', 'Extra', ' ', '', 'fields']) {
          invalid(
            { ...valid(serial++), [key]: 'x' },
            {
              label: `unknown ${key}`,
              match: 'exact',
              field: key,
              errors: [{ field: key, message: UNKNOWN_FIELD }],
            },
          );
        }
        for (const item of [num('5'), 'text', '', [], [valid(serial++)], null, true, false]) {
          invalid(item, {
            label: `item ${describeValue(item)}`,
            match: 'exact',
            field: null,
            errors: [{ field: null, message: NOT_AN_OBJECT }],
          });
        }

        // The first item is invalid: indexes are zero-based.
        assert.ok(expected.has(0));
        const response = await tenant.post(spec.path, toJson(items));
        assert.equal(response.status, 400, JSON.stringify(response.body).slice(0, 2000));
        assert.deepEqual(Object.keys(response.body).sort(), ['errors', 'statusCode']);
        assert.equal(response.body.statusCode, 400);
        checkItemErrors(response.body.errors, expected);
        assert.equal(
          await countRows(db, table, tenant.tenant.tenantId),
          before,
          'an invalid batch writes nothing',
        );
      });
    }
  });
}
