import { type BatchResource, MAX_BATCH_ITEMS } from '../../resources/batch-resource.js';
import type { CheckedBatch } from '../checked.js';
import { ByteKeySet } from './byte-key-set.js';
import { ColumnBytes, writeAbsent } from './column-bytes.js';
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isOneOf,
  isSpace,
  MINUS,
  NINE,
  NULL_TEXT,
  OPEN_BRACE,
  OPEN_BRACKET,
  POINT,
  QUOTE,
  SPACE,
  sameName,
  ZERO,
} from './json-bytes.js';
import { CHOICE, DECIMAL, type Plan, planOf } from './plain-plan.js';

/*
 * The check of a plain batch body on its bytes, without parsing it into objects: one pass that reads
 * each item's fields and writes them straight into the write statement's column literals. Measured
 * first (docs/decisions/0116-plain-bodies-checked-on-bytes.md): a server whose check cost nothing ran W3 with
 * half the CPU per item; the parse, the rows and the literals of a 1,000-price body, and their
 * garbage, were that half.
 *
 * It answers only for what it is sure of, and exactly as the general path (checkItems) would:
 * a body that is an array of flat objects whose values are plain (strings of printable ASCII without
 * escapes, numbers without an exponent, null), of a resource whose fields are text, choices and
 * decimals without bounds (no default but a plain string), every item valid and every key distinct. Anything else (an invalid item, an
 * escape, a repeated key, another field type) returns undefined and the general path decides, with its
 * messages: the field types keep their rules in one place, this path only recognises values those
 * rules certainly accept. test/batch/plain-batch.test.ts compares the two on generated bodies.
 */

const columnBytes: ColumnBytes[] = [];
/** A column's bytes past this are let go after the body (a worker thread's 10,000 items), not kept. */
const KEPT_COLUMN_BYTES = 1024 * 1024;

/** What one body left in the reused buffers that need not outlive it. */
function releaseScratch(): void {
  firstKeys.release();
  for (const column of columnBytes) {
    if (column.bytes.length > KEPT_COLUMN_BYTES) column.bytes = Buffer.allocUnsafeSlow(16 * 1024);
  }
}

/**
 * The batch checked on its bytes, as checkItems would have checked it (with no option that asks
 * for more: outcomes, on_invalid=skip), or undefined when the general path must decide.
 */
export function checkPlainBatch(
  resource: BatchResource,
  body: Uint8Array,
  statementRows: number,
): CheckedBatch | undefined {
  try {
    return scanPlainBatch(resource, body, statementRows);
  } catch {
    // Never expected (the property test calls scanPlainBatch, which throws): the general path
    // answers whatever this one could not read.
    return undefined;
  }
}

/** checkPlainBatch, throwing what goes wrong: for the tests, which must tell a crash from a refusal. */
export function scanPlainBatch(
  resource: BatchResource,
  body: Uint8Array,
  statementRows: number,
): CheckedBatch | undefined {
  const plan = planOf(resource);
  // Statements of a whole number of rows (PGlite's 2,000, PostgreSQL's no limit), as writeParams cuts them.
  if (
    !plan ||
    !(statementRows === Number.POSITIVE_INFINITY || (Number.isInteger(statementRows) && statementRows > 0))
  ) {
    return undefined;
  }
  try {
    return scan(plan, body, statementRows);
  } finally {
    releaseScratch();
  }
}

function scan(plan: Plan, b: Uint8Array, statementRows: number): CheckedBatch | undefined {
  const { fields, names, referenceAt, firstKeyAt } = plan;
  const width = fields.length;
  while (columnBytes.length < width) columnBytes.push(new ColumnBytes());
  const columns = columnBytes;
  for (let c = 0; c < width; c++) {
    columns[c]!.length = 0;
    columns[c]!.present = 0;
    columns[c]!.nulls = 0;
  }
  /** Per statement, each column's literal (filled at every statementRows rows and at the end). */
  const chunks: string[][] = [];
  const chunkStart = new Array<number>(width).fill(0);
  /** Rows of the statement being written. */
  let chunkRows = 0;
  const closeChunk = () => {
    // Fields and columns are one to one here (no items field): column c is some field's.
    const literals = new Array<string>(width);
    for (let c = 0; c < width; c++) {
      const column = columns[c]!;
      // A column that no row of the statement gives a value is {}; otherwise its last NULLs are
      // written, and the trailing comma left out.
      if (column.present === 0) {
        literals[c] = '{}';
        column.nulls = 0;
      } else {
        if (column.nulls > 0) column.writeNulls();
        literals[c] = `{${column.bytes.toString('latin1', chunkStart[c]!, column.length - 1)}}`;
      }
      chunkStart[c] = column.length;
      column.present = 0;
    }
    chunks.push(literals);
  };

  // Per item, where its referring value starts and ends in the body (-1: none); strings only if asked.
  let referenceSpans = spanScratch;
  firstKeys.clear(b);
  // Per field, the item (1-based) that last gave it a value: a repeated name, or a required field
  // left out, is the general path's to answer.
  const seen = new Int32Array(width);
  // Per member of an item (its first, second, ... name), the field the previous item named there.
  const expected = new Int32Array(width + 1).fill(-1);
  /** The field of the name at b[start, start + length), or -1 (a few fields: looked through). */
  const fieldNamed = (start: number, length: number): number => {
    for (let at = 0; at < names.length; at++) if (sameName(names[at]!, b, start, length)) return at;
    return -1;
  };
  const text = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  // Where the current item's referring value and first key part start and end (their text).
  let referenceStart = 0;
  let referenceEnd = -1;
  let firstKeyStart = 0;
  let firstKeyEnd = -1;

  const end = b.length;
  let p = 0;
  while (p < end && isSpace(b[p]!)) p++;
  if (b[p] !== OPEN_BRACKET) return undefined;
  p++;
  let items = 0;
  for (;;) {
    while (p < end && isSpace(b[p]!)) p++;
    if (b[p] !== OPEN_BRACE) return undefined;
    p++;
    items++;
    if (items > MAX_BATCH_ITEMS) return undefined;
    referenceEnd = -1;
    firstKeyEnd = -1;
    let member = 0;
    while (p < end && isSpace(b[p]!)) p++;
    if (b[p] !== CLOSE_BRACE) {
      for (;;) {
        // "name": items of one body name their fields in one order, mostly, so the name the previous
        // item had here is compared as it is read; any other is read, then looked up.
        if (b[p] !== QUOTE) return undefined;
        const nameStart = ++p;
        let f = expected[member]!;
        if (f >= 0) {
          const name = names[f]!;
          let i = 0;
          while (i < name.length && b[nameStart + i] === name[i]) i++;
          if (i === name.length && b[nameStart + i] === QUOTE) p = nameStart + i + 1;
          else f = -1;
        }
        if (f < 0) {
          while (p < end && b[p] !== QUOTE) {
            const byte = b[p]!;
            if (byte === BACKSLASH || byte < SPACE || byte > 0x7e) return undefined;
            p++;
          }
          if (p >= end || p === nameStart) return undefined;
          f = fieldNamed(nameStart, p - nameStart);
          p++;
        }
        if (f < 0 || seen[f] === items) return undefined;
        expected[member++] = f;
        seen[f] = items;
        const field = fields[f]!;
        while (p < end && isSpace(b[p]!)) p++;
        if (b[p] !== COLON) return undefined;
        p++;
        while (p < end && isSpace(b[p]!)) p++;
        const column = columns[field.column]!;
        const first = b[p];
        // The value's canonical text, when it is not null.
        let valueStart = 0;
        let valueEnd = -1;
        if (first === QUOTE) {
          // A string: printable ASCII, no escape, copied as it is read. A decimal's only if empty (absent).
          if (field.kind === DECIMAL && b[p + 1] !== QUOTE) return undefined;
          const start = ++p;
          if (column.nulls > 0) column.writeNulls();
          const out = column.reserve(field.max + 3);
          let at = column.length;
          out[at++] = QUOTE;
          // Past max bytes it is too long: the general path's to say so.
          const stop = Math.min(end, start + field.max);
          while (p < stop) {
            const byte = b[p]!;
            if (byte === QUOTE) break;
            if (byte === BACKSLASH || byte < SPACE || byte > 0x7e) return undefined;
            out[at++] = byte;
            p++;
          }
          if (b[p] !== QUOTE) return undefined;
          const length = p - start;
          p++;
          if (length === 0) {
            // Empty means absent (field-type.ts).
            if (field.required) return undefined;
            writeAbsent(field, column);
          } else {
            // A leading space may be all there is (blank, absent): the general path's to tell.
            if (b[start] === SPACE) return undefined;
            if (field.kind === CHOICE && !isOneOf(b, start, length, field.values)) return undefined;
            out[at++] = QUOTE;
            out[at++] = COMMA;
            column.length = at;
            column.present++;
            valueStart = start;
            valueEnd = p - 1;
          }
        } else if (first === MINUS || (first !== undefined && first >= ZERO && first <= NINE)) {
          // A number: a decimal field's, with no exponent, written as its canonical text.
          if (field.kind !== DECIMAL) return undefined;
          const start = p;
          if (b[p] === MINUS) p++;
          const integerStart = p;
          if (b[p] === ZERO) p++;
          else if (b[p]! > ZERO && b[p]! <= NINE) while (p < end && b[p]! >= ZERO && b[p]! <= NINE) p++;
          else return undefined;
          const integerEnd = p;
          let fractionEnd = p;
          if (b[p] === POINT) {
            p++;
            const fractionStart = p;
            while (p < end && b[p]! >= ZERO && b[p]! <= NINE) p++;
            if (p === fractionStart) return undefined;
            // Trailing zeros are not part of the canonical text (1.50 is 1.5; 2.0 is 2).
            fractionEnd = p;
            while (fractionEnd > fractionStart && b[fractionEnd - 1] === ZERO) fractionEnd--;
            if (fractionEnd === fractionStart) fractionEnd = integerEnd;
          }
          // An exponent, a digit after a leading zero, or digits a float may not hold: the general path.
          if (p < end && (b[p] === 0x65 || b[p] === 0x45 || (b[p]! >= ZERO && b[p]! <= NINE)))
            return undefined;
          if (p - start >= 16) return undefined;
          const integerDigits = b[integerStart] === ZERO ? 0 : integerEnd - integerStart;
          const fractionDigits = fractionEnd > integerEnd ? fractionEnd - integerEnd - 1 : 0;
          // -0 is 0 in the general path.
          if (integerDigits === 0 && fractionDigits === 0 && start !== integerStart) return undefined;
          if (integerDigits > field.integerDigits || fractionDigits > field.fractionDigits) return undefined;
          if (column.nulls > 0) column.writeNulls();
          const out = column.reserve(fractionEnd - start + 3);
          let at = column.length;
          out[at++] = QUOTE;
          for (let i = start; i < fractionEnd; i++) out[at++] = b[i]!;
          out[at++] = QUOTE;
          out[at++] = COMMA;
          column.length = at;
          column.present++;
          valueStart = start;
          valueEnd = fractionEnd;
        } else if (first === NULL_TEXT[0]) {
          if (b[p + 1] !== NULL_TEXT[1] || b[p + 2] !== NULL_TEXT[2] || b[p + 3] !== NULL_TEXT[3]) {
            return undefined;
          }
          p += 4;
          if (field.required) return undefined;
          writeAbsent(field, column);
        } else {
          return undefined;
        }
        if (f === referenceAt) {
          referenceStart = valueStart;
          referenceEnd = valueEnd;
        }
        if (f === firstKeyAt) {
          firstKeyStart = valueStart;
          firstKeyEnd = valueEnd;
        }
        while (p < end && isSpace(b[p]!)) p++;
        if (b[p] === COMMA) {
          p++;
          while (p < end && isSpace(b[p]!)) p++;
          continue;
        }
        if (b[p] === CLOSE_BRACE) break;
        return undefined;
      }
    }
    p++;
    // The fields the item left out: their default, unless one is required.
    for (let f = 0; f < width; f++) {
      if (seen[f] === items) continue;
      if (fields[f]!.required) return undefined;
      writeAbsent(fields[f]!, columns[fields[f]!.column]!);
    }
    if (referenceAt >= 0) {
      if (referenceSpans.length < items * 2) referenceSpans = spanScratch = grown(referenceSpans, items * 2);
      referenceSpans[items * 2 - 2] = referenceStart;
      referenceSpans[items * 2 - 1] = referenceEnd;
    }
    // A repeated first key part: whether the whole key repeats, and which item wins, is the general path's.
    if (firstKeyEnd < 0 || firstKeys.add(firstKeyStart, firstKeyEnd) !== true) return undefined;
    if (++chunkRows === statementRows) {
      closeChunk();
      chunkRows = 0;
    }
    while (p < end && isSpace(b[p]!)) p++;
    if (b[p] === COMMA) {
      p++;
      continue;
    }
    if (b[p] === CLOSE_BRACKET) break;
    return undefined;
  }
  p++;
  while (p < end && isSpace(b[p]!)) p++;
  if (p !== end) return undefined;
  if (chunkRows > 0) closeChunk();
  const spans = referenceAt >= 0 ? referenceSpans.slice(0, items * 2) : undefined;
  let referencedKeys: (string | undefined)[] | undefined;
  return {
    items,
    errors: [],
    invalid: undefined,
    keyTexts: undefined,
    write: { items, distinct: items, chunks, chunkRows: Math.min(statementRows, items), childItems: 0 },
    // Read only when the write names a missing reference (or a worker thread sends the result back):
    // a valid batch makes no string per item.
    get referencedKeys() {
      referencedKeys ??= spans
        ? Array.from({ length: items }, (_, at) =>
            spans[at * 2 + 1]! < 0
              ? // What the general path holds there too: the absent value's null (typed as undefined).
                (null as unknown as undefined)
              : text.toString('latin1', spans[at * 2]!, spans[at * 2 + 1]!),
          )
        : [];
      return referencedKeys;
    },
  };
}

/** A copy of spans with room for at least length values. */
function grown(spans: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const copy = new Int32Array(Math.max(length, spans.length * 2));
  copy.set(spans);
  return copy;
}

let spanScratch = new Int32Array(2_048);

const firstKeys = new ByteKeySet();
