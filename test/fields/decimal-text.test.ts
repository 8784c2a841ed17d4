import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { LosslessNumber } from 'lossless-json';
import {
  type DecimalParts,
  formatDecimal,
  parseDecimalText,
  readNumeric,
} from '../../src/fields/decimal-text.js';
import { decimal } from '../../src/fields/field.js';

const parts = (negative: boolean, integer: string, fraction: string): DecimalParts => ({
  negative,
  integer,
  fraction,
});
const ZERO = parts(false, '', '');

describe('parseDecimalText', () => {
  test('plain numbers: leading and trailing zeros dropped, sign kept', () => {
    const cases: [string, DecimalParts][] = [
      ['0', ZERO],
      ['000', ZERO],
      ['0.000', ZERO],
      ['12', parts(false, '12', '')],
      ['+12', parts(false, '12', '')],
      ['-12', parts(true, '12', '')],
      ['007.500', parts(false, '7', '5')],
      ['-12.50', parts(true, '12', '5')],
      ['100', parts(false, '100', '')],
      ['0.001', parts(false, '', '001')],
      ['.5', parts(false, '', '5')],
      ['5.', parts(false, '5', '')],
      ['12345678901234567890.123456789', parts(false, '12345678901234567890', '123456789')],
      ['9999999999999999.99', parts(false, '9999999999999999', '99')],
    ];
    for (const [text, expected] of cases) assert.deepEqual(parseDecimalText(text), expected, text);
  });

  test('zero is never negative', () => {
    for (const text of ['-0', '-0.0', '-000.000', '-0e5', '-0.0e-5', '+0']) {
      assert.deepEqual(parseDecimalText(text), ZERO, text);
    }
  });

  test('exponents move the point, in both directions, without a float', () => {
    const cases: [string, DecimalParts][] = [
      ['1e3', parts(false, '1000', '')],
      ['1E3', parts(false, '1000', '')],
      ['1e+3', parts(false, '1000', '')],
      ['1e0', parts(false, '1', '')],
      ['1e-0', parts(false, '1', '')],
      ['1.5e-3', parts(false, '', '0015')],
      ['-1.5E+2', parts(true, '150', '')],
      ['123.456e1', parts(false, '1234', '56')],
      ['123.456e-5', parts(false, '', '00123456')],
      ['0.000e5', ZERO],
      ['1.23456789012345678e15', parts(false, '1234567890123456', '78')],
      ['123456789012345678e-2', parts(false, '1234567890123456', '78')],
      ['1e21', parts(false, `1${'0'.repeat(21)}`, '')],
      ['1e-7', parts(false, '', '0000001')],
      ['5e-324', parts(false, '', `${'0'.repeat(323)}5`)],
    ];
    for (const [text, expected] of cases) assert.deepEqual(parseDecimalText(text), expected, text);
  });

  test('huge exponents stay huge (or tiny) but are clamped, never written out digit by digit', () => {
    for (const exponent of ['400', '1000000', '999999999', '99999999999999999999999']) {
      const large = parseDecimalText(`1e${exponent}`)!;
      assert.ok(large.integer.length > 18, `1e${exponent} still has more integer digits than any field`);
      assert.match(large.integer, /^10+$/);
      assert.equal(large.fraction, '');
      const small = parseDecimalText(`-1e-${exponent}`)!;
      assert.equal(small.integer, '');
      assert.ok(small.fraction.length > 2, `1e-${exponent} still has more decimals than any field`);
      assert.match(small.fraction, /^0+1$/);
      assert.equal(small.negative, true);
      assert.deepEqual(parseDecimalText(`0e${exponent}`), ZERO);
      // The work is the digits written: past a thousand places an exponent is only "far too large".
      assert.ok(large.integer.length <= 1001, `1e${exponent}: ${large.integer.length} digits written`);
      assert.ok(small.fraction.length <= 1001, `1e-${exponent}: ${small.fraction.length} digits written`);
    }
  });

  test('anything that is not a number: undefined', () => {
    for (const text of [
      '',
      '.',
      '-',
      '+',
      'e5',
      '.e5',
      '1e',
      '1e+',
      '1e1.5',
      'abc',
      '1.2.3',
      '1,5',
      ' 1',
      '1 ',
      '0x10',
      'Infinity',
      '-Infinity',
      'NaN',
      '--1',
      '+-1',
      '1_000',
      '١٢',
      '1e5x',
    ]) {
      assert.equal(parseDecimalText(text), undefined, JSON.stringify(text));
    }
  });
});

describe('formatDecimal', () => {
  test('canonical text: no exponent, no superfluous zeros, 0 for zero', () => {
    assert.equal(formatDecimal(ZERO), '0');
    assert.equal(formatDecimal(parts(false, '12', '')), '12');
    assert.equal(formatDecimal(parts(true, '12', '5')), '-12.5');
    assert.equal(formatDecimal(parts(false, '', '05')), '0.05');
    assert.equal(formatDecimal(parts(true, '', '05')), '-0.05');
  });

  test('parse then format: canonical texts come back unchanged, others are normalised', () => {
    for (const text of [
      '0',
      '1',
      '-1',
      '0.5',
      '-0.05',
      '100',
      '0.001',
      '1234567890123456.78',
      '-9999999999999999.99',
    ]) {
      assert.equal(formatDecimal(parseDecimalText(text)!), text);
    }
    const normalised: [string, string][] = [
      ['007.500', '7.5'],
      ['-0', '0'],
      ['+5', '5'],
      ['.5', '0.5'],
      ['5.', '5'],
      ['1.5e-3', '0.0015'],
      ['1.5e3', '1500'],
      ['-1.23456789012345678E15', '-1234567890123456.78'],
    ];
    for (const [text, expected] of normalised)
      assert.equal(formatDecimal(parseDecimalText(text)!), expected, text);
  });
});

describe('readNumeric', () => {
  const number = (value: unknown) => {
    const read = readNumeric(value);
    assert.equal(read.kind, 'number', `${String(value)} reads as a number`);
    return formatDecimal((read as { parts: DecimalParts }).parts);
  };

  test('JSON numbers (floats), exponents and -0 included', () => {
    assert.equal(number(1.5), '1.5');
    assert.equal(number(-1.5), '-1.5');
    assert.equal(number(0), '0');
    assert.equal(number(-0), '0');
    assert.equal(number(1e21), `1${'0'.repeat(21)}`);
    assert.equal(number(1e-7), '0.0000001');
    assert.equal(number(123456789012345), '123456789012345');
    assert.equal(number(Number.MAX_VALUE).length, 309);
    assert.equal(number(5e-324), `0.${'0'.repeat(323)}5`);
  });

  test('Infinity (what JSON.parse makes of 1e400) is a number far too large, never a small one', () => {
    const positive = readNumeric(Number.POSITIVE_INFINITY);
    assert.equal(positive.kind, 'number');
    assert.ok((positive as { parts: DecimalParts }).parts.integer.length > 18);
    assert.equal((positive as { parts: DecimalParts }).parts.negative, false);
    const negative = readNumeric(Number.NEGATIVE_INFINITY);
    assert.equal(negative.kind, 'number');
    assert.ok((negative as { parts: DecimalParts }).parts.integer.length > 18);
    assert.equal((negative as { parts: DecimalParts }).parts.negative, true);
  });

  test('lossless numbers keep every digit', () => {
    assert.equal(number(new LosslessNumber('12345678901234567.89')), '12345678901234567.89');
    assert.equal(number(new LosslessNumber('-1234567890123456.78')), '-1234567890123456.78');
    assert.equal(number(new LosslessNumber('1.23456789012345678e15')), '1234567890123456.78');
    assert.equal(number(new LosslessNumber('-0')), '0');
    assert.equal(number(new LosslessNumber('1e-400')), `0.${'0'.repeat(399)}1`);
  });

  test('numeric strings: plain decimals only', () => {
    assert.equal(number('1.5'), '1.5');
    assert.equal(number('-1.5'), '-1.5');
    assert.equal(number('+5'), '5');
    assert.equal(number('-.5'), '-0.5');
    assert.equal(number('007.50'), '7.5');
    assert.equal(number('1234567890123456.78'), '1234567890123456.78');
    for (const text of [
      '1e3',
      '1E3',
      '1,5',
      'abc',
      '1.2.3',
      '',
      '.',
      '-',
      'Infinity',
      'NaN',
      '0x1F',
      '١٢',
      '1 5',
    ]) {
      assert.deepEqual(readNumeric(text), { kind: 'badFormat' }, JSON.stringify(text));
    }
  });

  test('neither a number nor a string: notNumeric, objects that look like lossless numbers included', () => {
    for (const value of [
      true,
      false,
      null,
      undefined,
      {},
      [],
      [1],
      { value: '1' },
      { isLosslessNumber: true, value: '12' },
      10n,
    ]) {
      assert.deepEqual(readNumeric(value), { kind: 'notNumeric' }, String(value));
    }
  });
});

describe('DecimalField: JSON numbers (fast path, decimal-float.ts) answer as their exact text (general path)', () => {
  const fields = [
    decimal({ precision: 18, scale: 2 }),
    decimal({ precision: 10, scale: 2 }),
    decimal({ precision: 1, scale: 0, min: 0, max: 7 }),
    decimal({ precision: 3, scale: 3 }),
    decimal({ precision: 30, scale: 10, min: -5, max: 1e12 }),
  ];
  /** The same number as a LosslessNumber of the text String() gives: the general, digit-by-digit path. */
  function both(value: number) {
    for (const field of fields) {
      const fastErrors: string[] = [];
      const slowErrors: string[] = [];
      const fast = field.check(value, fastErrors);
      const slow = field.check(new LosslessNumber(String(value)), slowErrors);
      assert.deepEqual(
        [fast, fastErrors],
        [slow, slowErrors],
        `${value} as ${field.precision},${field.scale}`,
      );
    }
  }

  test('any double, money amounts, integers, and the edges', () => {
    fc.assert(fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), both), { numRuns: 5_000 });
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), (cents) => both(cents / 100)),
      { numRuns: 5_000 },
    );
    fc.assert(fc.property(fc.integer(), both), { numRuns: 2_000 });
    for (const value of [0, -0, 0.5, -0.5, 7, 8, -1, 1e21, 1e-7, 123456789012.12, 0.001, 99.999, 1e16]) {
      both(value);
    }
  });
});
