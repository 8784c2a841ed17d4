import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import fc from 'fast-check';
import { isLosslessNumber } from 'lossless-json';
import { formatDecimal, parseDecimalText, readNumeric } from '../../src/fields/decimal-text.js';
import { parseJsonBody, parseJsonBytes } from '../../src/fields/json-text.js';
import { charsetOf, isUtf8Charset } from '../../src/http/json-body.js';

/** A number with 17 significant digits: its presence sends a body down the lossless path. */
const LONG = '12345678901234567';

/** The exact decimal a parsed JSON number stands for, whichever path parsed it. */
function decimalOf(value: unknown): string {
  const read = readNumeric(value);
  assert.equal(read.kind, 'number', `${String(value)} is a number`);
  return formatDecimal((read as Extract<typeof read, { kind: 'number' }>).parts);
}

const canonical = (text: string) => formatDecimal(parseDecimalText(text)!);

/**
 * What each global regular expression found in `text` while `run` ran: [index, length] per match,
 * null when it found no more.
 */
function globalMatchesOver(text: string, run: () => void): Array<[number, number] | null> {
  const found: Array<[number, number] | null> = [];
  const exec = RegExp.prototype.exec;
  mock.method(RegExp.prototype, 'exec', function (this: RegExp, input: string) {
    const match = exec.call(this, input);
    if (this.global && input === text) found.push(match ? [match.index, match[0].length] : null);
    return match;
  });
  try {
    run();
  } finally {
    mock.restoreAll();
  }
  return found;
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be reproduced. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('parseJsonBody', () => {
  test('fast path: a body without long numbers or exponents parses like JSON.parse, numbers as floats', () => {
    const text = '[{"a":1.5,"b":"x","c":[true,null,-2000],"d":{"e":0.25}}]';
    const parsed = parseJsonBody(text);
    assert.deepEqual(parsed, JSON.parse(text));
    assert.equal(typeof (parsed as { a: unknown }[])[0]!.a, 'number');
  });

  test('an exponent takes the lossless path: 1e-400 must not underflow to 0', () => {
    const parsed = parseJsonBody('[{"c":-2e3,"t":1e-400}]') as Record<string, unknown>[];
    assert.equal(decimalOf(parsed[0]!['c']), '-2000');
    assert.ok(isLosslessNumber(parsed[0]!['t']));
    assert.equal((parsed[0]!['t'] as { value: string }).value, '1e-400');
  });

  test('lossless path: a body with a long number keeps the text of every number', () => {
    const parsed = parseJsonBody(`[{"a":1.5,"b":"x","n":${LONG}}]`) as Record<string, unknown>[];
    assert.ok(isLosslessNumber(parsed[0]!['n']));
    assert.equal(decimalOf(parsed[0]!['n']), LONG);
    assert.equal(decimalOf(parsed[0]!['a']), '1.5');
    assert.equal(parsed[0]!['b'], 'x');
  });

  test('numbers with 16 or more significant digits keep every digit, wherever they are', () => {
    const numbers = [
      '1234567890123456.78',
      '-9999999999999999.99',
      '9007199254740993',
      '0.12345678901234567',
      '1.0000000000000001',
      '1000000000000000.01',
      '1.2345678901234567e+30',
      '-1.2345678901234567E-30',
      '123456789012345678901234567890',
      '0.000000000000000000001',
    ];
    for (const n of numbers) {
      for (const body of [
        `[${n}]`,
        `[{"x":${n}}]`,
        `{"a":[1,{"b":${n}}]}`,
        `[\n  ${n}\n]`,
        `[1,${n}]`,
        `[${n},1]`,
      ]) {
        const parsed = parseJsonBody(body);
        const found = JSON.stringify(parsed, (_key, value) =>
          isLosslessNumber(value) ? decimalOf(value) : value,
        );
        assert.ok(found.includes(`"${canonical(n)}"`), `${body} -> ${found}`);
      }
    }
  });

  test('numbers past the float range keep their size: 1e400 is huge and 1e-400 is not zero', () => {
    for (const body of ['[1e400, -1e400, 1e-400, -1e-400]', `[1e400, -1e400, 1e-400, -1e-400, ${LONG}]`]) {
      const [huge, minusHuge, tiny, minusTiny] = (parseJsonBody(body) as unknown[]).map(decimalOf);
      assert.ok(huge!.length > 18 && !huge!.startsWith('-'), `${body}: 1e400 -> ${huge!.slice(0, 20)}`);
      assert.ok(minusHuge!.length > 18 && minusHuge!.startsWith('-'), `${body}: -1e400`);
      assert.notEqual(tiny, '0', `${body}: 1e-400 must not become 0`);
      assert.notEqual(minusTiny, '0', `${body}: -1e-400 must not become 0`);
    }
  });

  test('digits inside strings stay strings', () => {
    assert.deepEqual(parseJsonBody(`["${LONG}", "a${LONG}"]`), [LONG, `a${LONG}`]);
    assert.deepEqual(parseJsonBody(`{"${LONG}": "${LONG}.5"}`), { [LONG]: `${LONG}.5` });
  });

  test('both paths give the exact decimal of every number (2000 generated numbers)', () => {
    const next = random(20240601);
    for (let i = 0; i < 2000; i++) {
      const digits = 1 + Math.floor(next() * 15); // at most 15: exact through a float
      let mantissa = '';
      for (let d = 0; d < digits; d++) mantissa += String(Math.floor(next() * 10));
      const point = Math.floor(next() * (digits + 1));
      const integer = mantissa.slice(0, point).replace(/^0+/, '') || '0'; // JSON allows no leading zeros
      const fraction = mantissa.slice(point);
      let text = fraction ? `${integer}.${fraction}` : integer;
      if (next() < 0.3) text += `e${Math.floor(next() * 40) - 20}`;
      if (next() < 0.5) text = `-${text}`;
      const expected = canonical(text);
      const fast = (parseJsonBody(`[${text}]`) as unknown[])[0];
      const lossless = (parseJsonBody(`[${text},${LONG}]`) as unknown[])[0];
      assert.equal(decimalOf(fast), expected, `fast path: ${text}`);
      assert.equal(decimalOf(lossless), expected, `lossless path: ${text}`);
    }
  });

  test('invalid JSON throws, on both paths', () => {
    const invalid = [
      '',
      ' ',
      '[',
      '[1,]',
      '{"a":}',
      '{"a":1,}',
      "{'a':1}",
      'undefined',
      'NaN',
      '[Infinity]',
      '[01]',
      '[1.]',
      '[.5]',
      '[+1]',
      '[-]',
      '[1e]',
      '["a\nb"]',
      '["\\x"]',
      '[1] [2]',
      '[0x10]',
    ];
    for (const text of invalid) {
      assert.throws(() => parseJsonBody(text), `${JSON.stringify(text)} throws`);
      const lossless = text.includes('[') ? text.replace('[', `[${LONG},`) : `[${LONG},${text}]`;
      assert.throws(() => parseJsonBody(lossless), `${JSON.stringify(lossless)} throws`);
    }
  });

  test('duplicate keys: valid JSON, the same result on both paths (the last one wins, as in JSON.parse)', () => {
    const fast = '[{"a":1,"a":2}]';
    assert.deepEqual(parseJsonBody(fast), [{ a: 2 }]);
    const slow = `[{"a":1,"a":2,"n":${LONG}}]`;
    const parsed = parseJsonBody(slow) as Record<string, unknown>[];
    assert.equal(decimalOf(parsed[0]!['a']), '2');
  });

  test('"__proto__" is an own property on both paths; no prototype is touched', () => {
    for (const tail of ['', `,"n":${LONG}`]) {
      const parsed = parseJsonBody(
        `[{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}${tail}}]`,
      );
      const item = (parsed as Record<string, unknown>[])[0]!;
      assert.equal(Object.getPrototypeOf(item), Object.prototype);
      assert.ok(Object.hasOwn(item, '__proto__'));
      assert.ok(Object.hasOwn(item, 'constructor'));
      assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
      assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    }
  });

  test('deep nesting (100,000 levels) parses or throws, and never takes the process down', () => {
    const depth = 100_000;
    const bodies = [
      `${'['.repeat(depth)}${']'.repeat(depth)}`,
      `${'['.repeat(depth)}${LONG}${']'.repeat(depth)}`,
      `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
      `${'{"a":'.repeat(depth)}${LONG}${'}'.repeat(depth)}`,
    ];
    for (const body of bodies) {
      try {
        const parsed = parseJsonBody(body);
        assert.equal(typeof parsed, 'object');
      } catch (error) {
        assert.ok(error instanceof Error, 'an Error, which the body parser turns into a 400');
      }
    }
    assert.deepEqual(parseJsonBody('[1]'), [1], 'still working afterwards');
  });
});

const isWellFormed = (text: string) => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/** Every surrogate of the text written as a \u escape, as Python's json.dumps does. */
const escapeSurrogates = (json: string) =>
  json.replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

describe('parseJsonBytes: only well-formed Unicode', () => {
  test('bytes that are not UTF-8 are refused', () => {
    for (const bytes of [
      [0xc0, 0xaf],
      [0xff],
      [0xe9],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xe2, 0x82],
    ]) {
      const body = Buffer.concat([Buffer.from('["'), Buffer.from(bytes), Buffer.from('"]')]);
      assert.throws(() => parseJsonBytes(body), SyntaxError, `${bytes}`);
    }
    assert.deepEqual(parseJsonBytes(Buffer.from('["é😀"]')), ['é😀']);
  });

  test('a lone surrogate escape is refused; pairs and escaped backslashes are text', () => {
    for (const lone of [
      '"\\ud800"',
      '"\\udc00"',
      '"\\udc00\\ud800"',
      '"\\ud800", "\\udc00"',
      '"\\\\\\ud800"',
      '{"\\udbff": 1}',
    ]) {
      assert.throws(() => parseJsonBytes(Buffer.from(`[${lone}]`)), SyntaxError, lone);
    }
    assert.deepEqual(parseJsonBytes(Buffer.from('["\\ud83d\\ude00", "\\\\ud800", "\\\\\\ud83d\\ude00"]')), [
      '😀',
      '\\ud800',
      '\\😀',
    ]);
  });

  test('a long run of backslashes is checked in linear time: each run matched once, as a whole', () => {
    // 1 MiB of escaped backslashes (valid JSON text): a backtracking scan took minutes on this. The
    // work of the scan is counted as its matches over the body: a pattern of the run and what follows
    // it (the quadratic one) tries again from each backslash and matches no run, or more than a run.
    for (const tail of ['', 'u', '\\ud800']) {
      const text = `["${'\\'.repeat(512 * 1024)}${tail}"]`;
      const runs = [...text.matchAll(/\\+/g)].map((run) => [run.index, run[0].length]);
      const scans = globalMatchesOver(text, () => {
        if (tail === '\\ud800') assert.throws(() => parseJsonBytes(Buffer.from(text)), SyntaxError);
        else assert.deepEqual(parseJsonBytes(Buffer.from(text)), [JSON.parse(text)[0]]);
      });
      assert.deepEqual(scans, [...runs, null], `tail ${tail}`);
    }
  });

  test('property: refused exactly when some string or key is not well-formed', () => {
    const unit = fc.constantFrom(
      'a',
      '\\',
      'u',
      'd800',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      '😀',
      '"',
      'é',
    );
    const text = fc.array(unit, { maxLength: 12 }).map((units) => units.join(''));
    fc.assert(
      fc.property(fc.array(text, { maxLength: 5 }), text, fc.boolean(), (strings, key, escaped) => {
        let json = JSON.stringify([...strings, { [key]: 1 }]);
        if (escaped) json = escapeSurrogates(json);
        const wellFormed = [...strings, key].every(isWellFormed);
        if (wellFormed) assert.deepEqual(parseJsonBytes(Buffer.from(json)), JSON.parse(json));
        else assert.throws(() => parseJsonBytes(Buffer.from(json)), SyntaxError);
      }),
      { numRuns: 2_000 },
    );
  });

  test('charsetOf reads the parameter; UTF-8 in its spellings, nothing else', () => {
    assert.equal(charsetOf('application/json'), undefined);
    assert.equal(charsetOf(undefined), undefined);
    assert.equal(charsetOf('application/json; charset=UTF-8'), 'utf-8');
    assert.equal(charsetOf('application/json;charset="utf-8"'), 'utf-8');
    assert.equal(charsetOf('application/json; Charset = latin1 ; x=y'), 'latin1');
    for (const ok of [undefined, 'utf-8', 'utf8']) assert.equal(isUtf8Charset(ok), true, ok);
    for (const no of ['latin1', 'iso-8859-1', 'utf-16', '']) assert.equal(isUtf8Charset(no), false, no);
  });
});
