import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FileProblem,
  type FileRow,
  type FileShape,
  fileRows,
  itemOf,
  MAX_COLUMNS,
} from '../../src/jobs/file-rows.js';

/*
 * A job's file as rows (src/jobs/file-rows.ts): CSV and NDJSON as extensions.md 12 reads them, line
 * numbers, pieces cut anywhere, and hostile files ending in a FileProblem after a bounded read.
 */

const MIB = 1024 * 1024;
const FIELDS = ['code', 'name', 'price'];
const csvShape: FileShape = { format: 'csv', delimiter: ',', fieldNames: FIELDS, maxRowChars: MIB };
const ndjsonShape: FileShape = { ...csvShape, format: 'ndjson' };

async function* pieces(...chunks: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
}

/**
 * The rows, without their sizes (one test looks at those), each as the item it stands for (a CSV
 * row whose header names only fields keeps its cells instead: itemOf makes the item).
 */
async function rowsOf(
  shape: FileShape,
  ...chunks: (string | Uint8Array)[]
): Promise<Pick<FileRow, 'line' | 'item' | 'problem'>[]> {
  return (await sizedRowsOf(shape, ...chunks)).map((row) => {
    const { chars: _chars, cells: _cells, columns: _columns, ...rest } = row;
    return row.cells ? { ...rest, item: itemOf(row, shape.fieldNames) } : rest;
  });
}

async function sizedRowsOf(shape: FileShape, ...chunks: (string | Uint8Array)[]): Promise<FileRow[]> {
  const rows: FileRow[] = [];
  for await (const run of fileRows(pieces(...chunks), shape)) rows.push(...run);
  return rows;
}

async function problemOf(shape: FileShape, chunks: AsyncIterable<Uint8Array>): Promise<string> {
  try {
    for await (const _run of fileRows(chunks, shape)) {
      // read on
    }
  } catch (error) {
    assert.ok(error instanceof FileProblem, String(error));
    return error.message;
  }
  assert.fail('the file was read without a problem');
}

/** `total` bytes of `fill`, a MiB at a time, counting what was pulled. */
function endless(total: number, fill: (at: number) => Uint8Array, pulled: { bytes: number }) {
  return (async function* () {
    for (let at = 0; at < total; at += MIB) {
      const chunk = fill(at);
      pulled.bytes += chunk.byteLength;
      yield chunk;
    }
  })();
}

describe('CSV rows', () => {
  test('a BOM, CRLF, quoted cells over lines, blank lines: each row with the line it starts on', async () => {
    const text = '\ufeffcode,name,price\r\nA,"two\r\nlines",1\r\n\r\nB,"say ""hi""",\r\nC,,2.5\r\n';
    const rows = await rowsOf(csvShape, text);
    assert.deepEqual(rows, [
      { line: 2, item: { code: 'A', name: 'two\r\nlines', price: '1' } },
      { line: 5, item: { code: 'B', name: 'say "hi"' } },
      { line: 6, item: { code: 'C', price: '2.5' } },
    ]);
  });

  test("each row's size is its text's, its line break included", async () => {
    const rows = await sizedRowsOf(csvShape, 'code,name\r\nA,"b\nc"\r\nD,e');
    assert.deepEqual(
      rows.map((row) => row.chars),
      ['A,"b\nc"\r\n'.length, 'D,e'.length],
    );
    const lines = await sizedRowsOf(ndjsonShape, '{"code":"A"}\n{"code":"BB"}\r\n');
    assert.deepEqual(
      lines.map((row) => row.chars),
      [12, 14],
    );
  });

  test('the same rows however the bytes are cut, inside a UTF-8 character too', async () => {
    const text = 'price;code;name\n1;É1;"a;b"\n2;€2;"x\ny"\n3;😀;z';
    const shape = { ...csvShape, delimiter: ';' };
    const whole = await rowsOf(shape, text);
    assert.equal(whole.length, 3);
    assert.deepEqual(whole[2], { line: 5, item: { price: '3', code: '😀', name: 'z' } });
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(
        await rowsOf(shape, bytes.subarray(0, cut), bytes.subarray(cut)),
        whole,
        `cut at ${cut}`,
      );
    }
  });

  test('an unknown column is kept (the row is invalid by it), another count of cells is a problem', async () => {
    const rows = await rowsOf(csvShape, 'code,colour,__proto__\nA,,x\nB\n');
    assert.deepEqual(Object.keys(rows[0]!.item as object), ['code', 'colour', '__proto__']);
    assert.equal(Object.getPrototypeOf(rows[0]!.item), Object.prototype);
    assert.deepEqual(rows[1], {
      line: 3,
      item: undefined,
      problem: 'The row has 1 cells; the header row has 3',
    });
  });

  test('a header naming a field twice, a file without a header, a quote never closed', async () => {
    assert.match(await problemOf(csvShape, pieces('code,code\nA,B\n')), /names "code" more than once/);
    assert.equal(await problemOf(csvShape, pieces('')), 'The file has no header row');
    assert.match(
      await problemOf(csvShape, pieces('code,name\nA,"open\nB,c\n')),
      /quoted value is never closed/,
    );
    assert.match(await problemOf(csvShape, pieces('code,name\nA,"b"c\n')), /^Line 2: /);
  });

  test(`a header of 1,000,000 columns ends the file (more than ${MAX_COLUMNS} is no header)`, async () => {
    const wide = `${Array.from({ length: 1_000_000 }, (_, n) => `c${n}`).join(',')}\nA\n`;
    assert.match(await problemOf(csvShape, pieces(wide)), /longer than the longest row|columns/);
    const many = `${Array.from({ length: MAX_COLUMNS + 1 }, (_, n) => `c${n}`).join(',')}\n`;
    assert.match(await problemOf(csvShape, pieces(many)), /has 1,001 columns/);
  });

  test('one line of 100 MiB without a newline: refused after reading about the longest row', async () => {
    const pulled = { bytes: 0 };
    const line = endless(100 * MIB, () => Buffer.alloc(MIB, 0x61), pulled);
    assert.match(await problemOf(csvShape, line), /longer than the longest row/);
    assert.ok(pulled.bytes <= 4 * MIB, `read ${pulled.bytes} bytes`);
  });

  test('100 MiB of binary garbage: not UTF-8, refused at its first bytes', async () => {
    const pulled = { bytes: 0 };
    const garbage = endless(100 * MIB, (at) => Buffer.alloc(MIB, (at / MIB + 0x80) & 0xff), pulled);
    assert.match(
      await problemOf(csvShape, garbage),
      /^The file is not UTF-8 \(in its bytes 0 to 1,048,576\)$/,
    );
    assert.ok(pulled.bytes <= 2 * MIB, `read ${pulled.bytes} bytes`);
    assert.match(
      await problemOf(csvShape, pieces('code\nA\xff\n'.replace('\xff', ''), Buffer.from([0xc3]))),
      /ends inside a character/,
    );
  });
});

describe('NDJSON rows', () => {
  test('one value a line: a BOM, CRLF, blank lines, numbers whole, a line that is not JSON', async () => {
    const text =
      '\ufeff{"code":"A","price":12345678901234567.891}\r\n\r\n[1]\n{"code":\n"\\ud800"\n{"code":"B"}';
    const rows = await rowsOf(ndjsonShape, text);
    assert.equal(rows.length, 5);
    assert.equal(rows[0]!.line, 1);
    assert.equal(String((rows[0]!.item as { price: unknown }).price), '12345678901234567.891');
    assert.deepEqual(rows[1], { line: 3, item: [1] });
    assert.deepEqual(rows[2], { line: 4, item: undefined, problem: 'The line is not valid JSON' });
    assert.deepEqual(rows[3], { line: 5, item: undefined, problem: 'The line is not valid JSON' });
    assert.deepEqual(rows[4], { line: 6, item: { code: 'B' } });
  });

  test('one line of 100 MiB: refused after reading about the longest row', async () => {
    const pulled = { bytes: 0 };
    const line = endless(100 * MIB, () => Buffer.alloc(MIB, 0x20), pulled);
    assert.match(await problemOf(ndjsonShape, line), /^Line 1 is longer than the longest row allowed/);
    assert.ok(pulled.bytes <= 3 * MIB, `read ${pulled.bytes} bytes`);
  });
});

describe('the CSV reader against csv-parse', () => {
  test('random files: the same cells as csv-parse, each record on the line it starts, however cut', async () => {
    const { parse } = await import('csv-parse/sync');
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)]!;
    for (let file = 0; file < 200; file++) {
      const delimiter = pick([',', ';', '\t', '|']);
      const newline = pick(['\n', '\r\n', '\r']);
      const records: string[][] = [];
      const starts: number[] = [];
      let line = 1;
      let text = '';
      const width = 1 + Math.floor(random() * 4);
      for (let r = 0; r < 1 + Math.floor(random() * 8); r++) {
        const cells = Array.from({ length: width }, () =>
          pick(['', 'a', 'b c', `x${delimiter}y`, 'q"uote', 'two\nlines', 'crlf\r\nin', 'é€😀', ' ']),
        );
        // Never a record of one empty cell: that is an empty line, no record.
        if (cells.length === 1 && cells[0] === '') cells[0] = 'z';
        const quoted = cells.map((cell) =>
          /["\r\n]/.test(cell) || cell.includes(delimiter) || random() < 0.2
            ? `"${cell.replaceAll('"', '""')}"`
            : cell,
        );
        records.push(cells);
        starts.push(line);
        text += quoted.join(delimiter) + newline;
        line += 1 + (cells.join('').match(/\r\n|\n|\r/g)?.length ?? 0);
      }
      const expected = parse(text, { delimiter, relax_column_count: true, relax_quotes: true }) as string[][];
      assert.deepEqual(expected, records, 'the generator and csv-parse agree');
      const bytes = Buffer.from(text);
      for (const cut of [0, Math.floor(bytes.length / 3), bytes.length - 1]) {
        const shape: FileShape = { format: 'csv', delimiter, fieldNames: [], maxRowChars: MIB };
        const header = records[0]!.map((_, at) => `c${at}`).join(delimiter) + newline;
        const whole = Buffer.concat([Buffer.from(header), bytes]);
        const rows = await rowsOf(shape, whole.subarray(0, cut), whole.subarray(cut));
        assert.deepEqual(
          rows.map((row) => row.line),
          starts.map((start) => start + 1),
          `file ${file}`,
        );
        assert.deepEqual(
          rows.map((row) => Object.values(row.item as object)),
          records,
          `file ${file}`,
        );
      }
    }
  });
});
