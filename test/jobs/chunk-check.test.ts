import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, test } from 'node:test';
import { checkRowFields, keyOf } from '../../src/batch/check-block.js';
import { chunksChecked } from '../../src/jobs/checked-chunks.js';
import { type ChunkTask, checkChunk, keyText } from '../../src/jobs/chunk-check.js';
import { checkChunkInWorker } from '../../src/jobs/chunk-check-pool.js';
import { blocksOf, fileShape } from '../../src/jobs/file-blocks.js';
import { fileChunks, lineBreaks } from '../../src/jobs/file-chunks.js';
import { FileProblem, fileRows } from '../../src/jobs/file-rows.js';
import { textAt } from '../../src/jobs/joined-texts.js';
import { hashKey } from '../../src/jobs/repeated-keys.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { prices } from '../../src/resources/prices.js';
import { StagedText } from '../../src/sql/job-staging.js';

/*
 * A job's file checked in chunks side by side (src/jobs/checked-chunks.ts) reads the rows a reading
 * of the whole file in one pass reads: the same lines, problems, keys and COPY text, and the same
 * problem that ends the file, wherever the chunks are cut (a quoted line break across a cut, CR line
 * breaks, a BOM inside the file, a header after blank lines, stored pieces cut anywhere).
 */

interface Reading {
  /** Per row: its line, and its problems (JSON) or its key. */
  rows: string[];
  /** The valid rows' keys (keyOf). */
  keys: string[];
  /** With a reference: per row, the key it names ('' for none), and per valid row its key as sent. */
  referred: string[];
  validKeyTexts: string[];
  staged: string;
  problem?: string;
}

type Job = { format: 'csv' | 'ndjson'; delimiter: string };

/** The file read in one pass, as the check read it before it was cut in chunks. */
async function onePass(resource: BatchResource, job: Job, file: Buffer, cuts: number[]): Promise<Reading> {
  const reading: Reading = { rows: [], keys: [], referred: [], validKeyTexts: [], staged: '' };
  const staged = new StagedText(resource);
  try {
    const rows = fileRows(piecesOf(file, cuts), fileShape(job, resource));
    for await (const block of blocksOf(rows)) {
      const checked = await checkRowFields(resource, block);
      block.forEach((row, at) => {
        const errors = checked.errors[at];
        const key = keyText(resource, row);
        reading.rows.push(errors ? `${row.line} ${key} ${JSON.stringify(errors)}` : `${row.line} valid`);
        if (resource.reference) reading.referred.push(checked.references[at] ?? '');
        if (errors) return;
        reading.keys.push(keyOf(resource.keyPositions, checked.values[at]!));
        if (resource.reference) reading.validKeyTexts.push(key);
        staged.add(row.line, key, checked.values[at]!);
      });
    }
  } catch (error) {
    if (!(error instanceof FileProblem)) throw error;
    reading.problem = error.message;
  }
  reading.staged = Buffer.from(staged.rows.view()).toString() + Buffer.from(staged.items.view()).toString();
  return reading;
}

/** The file read in chunks of about `chunkBytes`, from pieces cut at `cuts`, each task and result cloned as a thread's are. */
async function chunked(
  resource: BatchResource,
  job: Job,
  file: Buffer,
  cuts: number[],
  chunkBytes: number,
): Promise<Reading & { checks: number }> {
  const reading: Reading & { checks: number } = {
    rows: [],
    keys: [],
    referred: [],
    validKeyTexts: [],
    staged: '',
    checks: 0,
  };
  const check = async (task: ChunkTask) => {
    reading.checks++;
    return structuredClone(await checkChunk(resource, structuredClone(task)));
  };
  let rows = '';
  let items = '';
  for await (const checked of chunksChecked(piecesOf(file, cuts), job, resource, {
    stage: () => true,
    check,
    chunkBytes,
  })) {
    let v = 0;
    let f = 0;
    const hash = new Uint32Array(2);
    checked.lines.forEach((line, at) => {
      if (resource.reference) {
        const named = checked.referredAt[at]!;
        reading.referred.push(named === -1 ? '' : checked.referred[named]!);
      }
      const failed = checked.failed[f];
      if (failed?.at === at) {
        reading.rows.push(`${line} ${failed.key} ${JSON.stringify(failed.errors)}`);
        f++;
        return;
      }
      assert.equal(checked.valid[v], at);
      reading.rows.push(`${line} valid`);
      const key = textAt(checked.keys, v);
      reading.keys.push(key);
      hashKey(key, hash, 0);
      assert.deepEqual(checked.keyHashes.subarray(2 * v, 2 * v + 2), hash, `the hashes of ${key}`);
      if (resource.reference) reading.validKeyTexts.push(textAt(checked.validKeyTexts, v));
      v++;
    });
    rows += Buffer.from(checked.staged).toString();
    items += checked.stagedItems ? Buffer.from(checked.stagedItems).toString() : '';
    if (checked.problem !== undefined) reading.problem = checked.problem;
  }
  reading.staged = rows + items;
  return reading;
}

async function* piecesOf(file: Buffer, cuts: number[]): AsyncGenerator<Uint8Array> {
  let from = 0;
  for (const cut of [...cuts, file.byteLength]) {
    if (cut < from) continue;
    yield file.subarray(from, cut);
    from = cut;
  }
}

/** Cuts of the stored pieces: every `step` bytes, moved by a little so they fall anywhere. */
function cutsOf(file: Buffer, step: number): number[] {
  const cuts: number[] = [];
  for (let at = step; at < file.byteLength; at += step) cuts.push(at - (at % 7));
  return cuts;
}

async function assertSameReading(
  resource: BatchResource,
  job: Job,
  text: string | Buffer,
  chunkBytes: number[],
): Promise<Reading> {
  const file = Buffer.isBuffer(text) ? text : Buffer.from(text);
  let whole: Reading | undefined;
  // Pieces of 5 bytes for a short file only: a long one reads slowly so.
  for (const step of [file.byteLength > 100_000 ? 4096 : 5, 1000, file.byteLength + 1]) {
    const cuts = cutsOf(file, step);
    const expected = await onePass(resource, job, file, cuts);
    whole = expected;
    for (const bytes of chunkBytes) {
      const { checks: _checks, ...reading } = await chunked(resource, job, file, cuts, bytes);
      const where = `chunks of ${bytes} bytes, pieces of ${step}`;
      if (expected.problem === undefined) {
        assert.deepEqual(reading, expected, where);
        continue;
      }
      // The file ends there: the rows read before it are as many as the blocks and chunks it ends in hold.
      assert.equal(reading.problem, expected.problem, where);
      assert.deepEqual(reading.rows.slice(0, expected.rows.length), expected.rows, where);
    }
  }
  return whole!;
}

const csv = { format: 'csv', delimiter: ',' } as const;
const HEADER = 'product_code,price_list,price,factor_description\n';

function priceRows(count: number, row: (n: number) => string = (n) => `P${n},L1,${n}.5,unit`): string {
  let text = '';
  for (let n = 1; n <= count; n++) text += `${row(n)}\n`;
  return text;
}

describe('a file checked in chunks reads as in one pass', () => {
  test('plain CSV, invalid rows among them, cut in chunks of every size', async () => {
    const text =
      HEADER +
      priceRows(300, (n) =>
        n % 37 === 0 ? `P${n},L1,not a price,unit` : n % 53 === 0 ? `P${n},L1` : `P${n},L1,${n},u`,
      );
    const reading = await assertSameReading(prices, csv, text, [1, 16, 100, 1024, 64 * 1024]);
    assert.equal(reading.rows.length, 300);
    assert.ok(reading.rows.some((row) => row.includes('not a price') || row.includes('cells')));
  });

  test('rows naming the same products, and none: each product sent once a chunk', async () => {
    const text = HEADER + priceRows(200, (n) => (n % 31 === 0 ? `,L${n},${n},u` : `P${n % 7},L${n},${n},u`));
    const reading = await assertSameReading(prices, csv, text, [1, 100, 1024, 64 * 1024]);
    assert.equal(reading.referred.filter((name) => name === '').length, 6);
    const chunks = [];
    for await (const chunk of fileChunks(piecesOf(Buffer.from(text), []), 'csv', 1 << 20, 1 << 20)) {
      chunks.push(chunk);
    }
    assert.equal(chunks.length, 1);
    const checked = await checkChunk(prices, {
      resource: prices.name,
      ...csv,
      chunk: chunks[0]!,
      stage: true,
    });
    assert.deepEqual([...checked.referred].sort(), ['P0', 'P1', 'P2', 'P3', 'P4', 'P5', 'P6']);
    assert.equal(checked.referredAt.length, 200);
  });

  test('quoted values holding LF, CRLF and CR line breaks across the cuts: the chunk is checked again', async () => {
    const rows = priceRows(200, (n) =>
      n % 3 === 0 ? `P${n},L1,${n},"a\nb"` : n % 5 === 0 ? `P${n},L1,${n},"c\r\nd"` : `P${n},L1,${n},"e\rf"`,
    );
    const text = HEADER + rows;
    await assertSameReading(prices, csv, text, [1, 10, 50, 300]);
    const file = Buffer.from(text);
    const { checks } = await chunked(prices, csv, file, cutsOf(file, 64), 10);
    const chunks = [];
    for await (const chunk of fileChunks(piecesOf(file, cutsOf(file, 64)), 'csv', 1 << 20, 10))
      chunks.push(chunk);
    assert.ok(checks > chunks.length, `${checks} checks of ${chunks.length} chunks: some were checked again`);
  });

  test('CRLF and CR-only line breaks, blank lines, a header after blank lines, a BOM only at the start', async () => {
    const crlf = `${HEADER + priceRows(50)}`.replaceAll('\n', '\r\n');
    await assertSameReading(prices, csv, `\uFEFF${crlf}`, [1, 7, 100]);
    await assertSameReading(prices, csv, `${HEADER}${priceRows(50)}`.replaceAll('\n', '\r'), [1, 7, 100]);
    await assertSameReading(prices, csv, `\n\n\r\n${HEADER}\n${priceRows(20)}\n\n`, [1, 3, 40]);
    // A BOM inside the file is a character of its cell, wherever a chunk starts.
    const inside = `${HEADER}P1,L1,1,u\n\uFEFFP2,L1,2,u\nP3,L1,3,u\n`;
    const reading = await assertSameReading(prices, csv, inside, [1, 5, 30]);
    assert.match(reading.staged, /\n3\t\{"product_code":"\uFEFFP2"/);
  });

  test('a semicolon file, an unknown column, a header only, an empty file', async () => {
    await assertSameReading(
      prices,
      { format: 'csv', delimiter: ';' },
      HEADER.replaceAll(',', ';') + priceRows(30).replaceAll(',', ';'),
      [1, 64],
    );
    await assertSameReading(prices, csv, `product_code,price_list,price,colour\n${priceRows(30)}`, [1, 64]);
    const header = await assertSameReading(prices, csv, HEADER, [1, 8]);
    assert.equal(header.rows.length, 0);
    const empty = await assertSameReading(prices, csv, '', [1, 8]);
    assert.equal(empty.problem, 'The file has no header row');
  });

  test('what ends the file: a quote never closed, text after a closing quote, bytes not UTF-8, a row too long', async () => {
    const never = await assertSameReading(
      prices,
      csv,
      `${HEADER}${priceRows(40)}P9,L1,1,"open\n${priceRows(5)}`,
      [1, 64],
    );
    assert.match(never.problem!, /never closed \(it opens on line 42\)/);
    const after = await assertSameReading(
      prices,
      csv,
      `${HEADER}${priceRows(40)}P9,L1,1,"x"y\n${priceRows(5)}`,
      [1, 64],
    );
    assert.match(after.problem!, /^Line 42: a quoted value is followed by more text/);
    const bad = Buffer.concat([
      Buffer.from(HEADER + priceRows(40)),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`\n${priceRows(5)}`),
    ]);
    const notUtf8 = await assertSameReading(prices, csv, bad, [1, 64]);
    assert.match(notUtf8.problem!, /^The file is not UTF-8 \(in its bytes/);
    const long = await assertSameReading(
      prices,
      csv,
      `${HEADER}P1,L1,1,${'x'.repeat(1100 * 1024)}\n${priceRows(3)}`,
      [1024, 64 * 1024],
    );
    assert.match(long.problem!, /^Line 2: the row is longer than the longest row allowed/);
  });

  test('NDJSON with children: lines, blank lines, lines that are not JSON, the items COPY text', async () => {
    const line = (n: number) =>
      n % 11 === 0
        ? '{not json'
        : n % 13 === 0
          ? ''
          : JSON.stringify({
              code: `D${n}`,
              customer_code: `C${n}`,
              items: [{ product_code: `P${n}`, quantity: n }],
            });
    let text = '';
    for (let n = 1; n <= 60; n++) text += `${line(n)}${n % 4 === 0 ? '\r\n' : '\n'}`;
    const reading = await assertSameReading(
      deliveries,
      { format: 'ndjson', delimiter: ',' },
      text,
      [1, 50, 4096],
    );
    assert.ok(reading.rows.some((row) => row.includes('not valid JSON')));
  });
});

describe('file chunks', () => {
  test('each ends after a line break and starts on the line the breaks before it give', async () => {
    const file = Buffer.from(`a\r\nb\rc\nd\r\r\ne\n${'f'.repeat(40)}\ng`);
    for (const size of [1, 2, 5, 13]) {
      const chunks = [];
      for await (const chunk of fileChunks(piecesOf(file, cutsOf(file, 3)), 'csv', 1 << 20, size))
        chunks.push(chunk);
      assert.equal(Buffer.concat(chunks.map((chunk) => chunk.bytes)).toString(), file.toString());
      let line = 1;
      for (const chunk of chunks.slice(0, -1)) {
        assert.equal(chunk.line, line);
        assert.match(Buffer.from(chunk.bytes).toString(), /(\n|\r)$/);
        line += lineBreaks(chunk.bytes, 'csv');
      }
      assert.equal(chunks.at(-1)!.more, false);
      assert.ok(chunks.slice(0, -1).every((chunk) => chunk.more));
    }
    assert.equal(lineBreaks(Buffer.from('a\r\nb\rc\nd\r\r\ne'), 'csv'), 5);
    assert.equal(lineBreaks(Buffer.from('a\r\nb\rc\nd\r\r\ne'), 'ndjson'), 3);
  });

  test('a file without line breaks makes chunks of at most the span allowed', async () => {
    const file = Buffer.alloc(10_000, 'x');
    const sizes = [];
    for await (const chunk of fileChunks(piecesOf(file, cutsOf(file, 100)), 'csv', 1_000, 10))
      sizes.push(chunk.bytes.byteLength);
    assert.ok(
      sizes.every((size) => size <= 1_100),
      String(sizes),
    );
  });
});

describe('the threads that check chunks', () => {
  test('a chunk checked in a thread: the same result, its bytes given back, the thread at a lower priority', async () => {
    const file = Buffer.from(
      `${HEADER}${priceRows(500, (n) => (n % 50 === 0 ? `P${n},L1,x,u` : `P${n},L1,${n},u`))}`,
    );
    const chunks = [];
    for await (const chunk of fileChunks(piecesOf(file, cutsOf(file, 1000)), 'csv', 1 << 20, 1 << 20)) {
      chunks.push(chunk);
    }
    assert.equal(chunks.length, 1);
    const chunk = chunks[0]!;
    const task: ChunkTask = { resource: 'prices', format: 'csv', delimiter: ',', chunk, stage: true };
    const here = await checkChunk(prices, structuredClone(task));
    const there = await checkChunkInWorker(task);
    assert.equal(chunk.bytes.byteLength, 0, 'the bytes moved to the thread');
    assert.deepEqual(Buffer.from(there.bytes), file);
    assert.deepEqual(there, here);
    assert.equal(there.failed.length, 10);
    if (process.platform !== 'linux') return;
    // The pool's thread lives on for a while after its chunk: its priority is its own.
    const nices = readdirSync('/proc/self/task').map((task) =>
      Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]),
    );
    // Relative to the process's (a test run under `nice` starts higher than 0).
    const own = getPriority();
    assert.equal(nices[0], own, 'the main thread keeps its priority');
    const lower = Math.min(19, own + 10);
    assert.ok(nices.includes(lower), `a thread at nice ${lower} among ${nices.join(',')}`);
  });
});
