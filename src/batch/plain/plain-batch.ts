import { randomInt } from 'node:crypto';
import { ChoiceField } from '../fields/choice.js';
import { DecimalField } from '../fields/decimal.js';
import type { Field } from '../fields/field-type.js';
import { TextField } from '../fields/text.js';
import { type BatchResource, MAX_BATCH_ITEMS } from '../resources/batch-resource.js';
import type { CheckedBatch } from './checked.js';

/*
 * The check of a plain batch body on its bytes, without parsing it into objects: one pass that reads
 * each item's fields and writes them straight into the write statement's column literals. Measured
 * first (docs/performance.md, "Eighteenth session"): a server whose check cost nothing ran W3 with
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

const TEXT = 0;
const CHOICE = 1;
const DECIMAL = 2;

interface PlainField {
  kind: typeof TEXT | typeof CHOICE | typeof DECIMAL;
  required: boolean;
  /** Text: the most characters (the bytes of printable ASCII); choice: its longest value's. */
  max: number;
  /** Decimal: the most integer and fraction digits. */
  integerDigits: number;
  fractionDigits: number;
  /** Choice: the values taken, as bytes. */
  values: Uint8Array[];
  /** Where the field's values go: its column among the statement's. */
  column: number;
  /** What an item that leaves the field out gives: its default's literal element, or null for NULL. */
  absent: Uint8Array | null;
}

interface Plan {
  fields: PlainField[];
  names: Uint8Array[];
  /** The field whose value a row refers to (BatchResource.reference), or -1. */
  referenceAt: number;
  /** The first key part's field: distinct values there make distinct keys. */
  firstKeyAt: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const SPACE = 0x20;
const MINUS = 0x2d;
const POINT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const NULL_TEXT = new Uint8Array([0x6e, 0x75, 0x6c, 0x6c]); // null

/** Printable ASCII other than the quote and the backslash: the same bytes in JSON and in a literal. */
const isPlainText = (text: string) => /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(text);

const plans = new WeakMap<BatchResource, Plan | null>();

/** How the resource's fields are read on bytes; null when one of them is not a plain field. */
function planOf(resource: BatchResource): Plan | null {
  let plan = plans.get(resource);
  if (plan === undefined) {
    plan = makePlan(resource);
    plans.set(resource, plan);
  }
  return plan;
}

function plainField(field: Field, column: number): PlainField | undefined {
  const { defaultValue } = field;
  if (!field.isColumn) return undefined;
  // A default other than NULL is written as arrayLiteral writes it: a quoted plain string only.
  if (defaultValue !== null && (typeof defaultValue !== 'string' || !isPlainText(defaultValue)))
    return undefined;
  const absent = defaultValue === null ? null : Buffer.from(JSON.stringify(defaultValue), 'latin1');
  const common = { required: field.required, column, absent, max: 0, integerDigits: 0, fractionDigits: 0 };
  if (field instanceof ChoiceField) {
    if (!field.values.every((value) => value.length > 0 && isPlainText(value))) return undefined;
    const values = field.values.map((value) => Buffer.from(value, 'latin1'));
    return { ...common, kind: CHOICE, max: Math.max(...values.map((value) => value.length)), values };
  }
  if (field instanceof TextField) {
    return field.kind === 'text' ? { ...common, kind: TEXT, max: field.max, values: [] } : undefined;
  }
  if (field instanceof DecimalField) {
    if (field.min !== undefined || field.max !== undefined) return undefined;
    return {
      ...common,
      kind: DECIMAL,
      integerDigits: field.precision - field.scale,
      // A float below 1e-6 is written with an exponent (1e-7), which the general path reads its own way.
      fractionDigits: Math.min(field.scale, 6),
      values: [],
    };
  }
  return undefined;
}

function makePlan(resource: BatchResource): Plan | null {
  if (resource.childPosition !== undefined) return null;
  // The referring value and the first key part are read where the item gives them, never defaulted.
  const reference = resource.reference?.position;
  const firstKey = resource.keyPositions[0]!;
  if ([reference, firstKey].some((at) => at !== undefined && resource.fieldList[at]!.defaultValue !== null)) {
    return null;
  }
  const fields: PlainField[] = [];
  for (let at = 0; at < resource.fieldList.length; at++) {
    const field = plainField(resource.fieldList[at]!, resource.columnPositions.indexOf(at));
    if (!field || field.column < 0 || !isPlainText(resource.fieldNames[at]!)) return null;
    fields.push(field);
  }
  return {
    fields,
    names: resource.fieldNames.map((name) => Buffer.from(name, 'latin1')),
    referenceAt: reference ?? -1,
    firstKeyAt: firstKey,
  };
}

/** A column's literal being written: its bytes so far, reused from batch to batch (the check is synchronous). */
class ColumnBytes {
  bytes = Buffer.allocUnsafeSlow(16 * 1024);
  length = 0;
  /** Rows of the current statement that hold a value (not null). */
  present = 0;
  /**
   * NULLs not written yet: written before the column's next value, or never if the statement's
   * column holds none (it is then {}, and an optional field most items leave out costs nothing).
   */
  nulls = 0;

  reserve(more: number): Uint8Array {
    if (this.length + more > this.bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.length + more));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    return this.bytes;
  }

  writeNulls(): void {
    const out = this.reserve(this.nulls * 5);
    let at = this.length;
    for (; this.nulls > 0; this.nulls--) {
      out[at++] = NULL_TEXT[0]!;
      out[at++] = NULL_TEXT[1]!;
      out[at++] = NULL_TEXT[2]!;
      out[at++] = NULL_TEXT[3]!;
      out[at++] = COMMA;
    }
    this.length = at;
  }
}

const columnBytes: ColumnBytes[] = [];
const EMPTY = new Uint8Array(0);
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

/**
 * The first key parts of one body, by their bytes: open addressing over an FNV-1a hash, no string
 * made. Its tables are reused from body to body (a slot belongs to this body when its round is the
 * current one); they hold up to MAX_BATCH_ITEMS keys at most half full.
 */
/** FNV-1a's offset basis, mixed with a number drawn when the process starts. */
const HASH_SEED = (0x811c9dc5 ^ randomInt(0x7fffffff)) | 0;
/** At most this many slots looked at per key: 10,000 keys fill a third of the table, a few each. */
export const MAX_PROBES = 32;

export class ByteKeySet {
  static readonly #size = 32_768; // a power of two, at least 2 * MAX_BATCH_ITEMS
  readonly #seed: number;
  // Made at the first body (384 KB), not when the module loads.
  #rounds = new Int32Array(0);
  #starts = new Int32Array(0);
  #ends = new Int32Array(0);
  #round = 0;
  #body: Uint8Array = EMPTY;

  constructor(seed = HASH_SEED) {
    this.#seed = seed;
  }

  /** Lets go of the last body (it may be large). */
  release(): void {
    this.#body = EMPTY;
  }

  /** Empties the set for the keys of body b. */
  clear(b: Uint8Array): void {
    if (this.#rounds.length === 0) {
      this.#rounds = new Int32Array(ByteKeySet.#size);
      this.#starts = new Int32Array(ByteKeySet.#size);
      this.#ends = new Int32Array(ByteKeySet.#size);
    }
    this.#body = b;
    // Rounds stay int32 (what the table holds); after 2^31 bodies the table starts over.
    if (++this.#round > 0x7fffffff) {
      this.#rounds.fill(0);
      this.#round = 1;
    }
  }

  /**
   * Adds b[start, end) of the body: true if new, false if those bytes are there already, undefined if
   * they collide with too many others. The hash starts from a number of this process's own, and a key
   * that probes past MAX_PROBES slots gives up: a body of keys made to collide (a client that knows the
   * hash) costs no more than a normal one before the general path, whose Set V8 seeds, takes it.
   */
  add(start: number, end: number): boolean | undefined {
    const b = this.#body;
    let hash = this.#seed;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ b[i]!, 0x01000193);
    const mask = ByteKeySet.#size - 1;
    for (let slot = hash & mask, probes = 0; ; slot = (slot + 1) & mask) {
      if (++probes > MAX_PROBES) return undefined;
      if (this.#rounds[slot] !== this.#round) {
        this.#rounds[slot] = this.#round;
        this.#starts[slot] = start;
        this.#ends[slot] = end;
        return true;
      }
      if (this.#same(this.#starts[slot]!, this.#ends[slot]!, start, end)) return false;
    }
  }

  #same(aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
    if (aEnd - aStart !== bEnd - bStart) return false;
    const b = this.#body;
    for (let i = 0; i < aEnd - aStart; i++) if (b[aStart + i] !== b[bStart + i]) return false;
    return true;
  }
}

const firstKeys = new ByteKeySet();

/** JSON's white space: space, tab, line feed, carriage return. */
function isSpace(byte: number): boolean {
  return byte === SPACE || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** An absent value (left out, null or empty): the field's default, NULL unless it has one. */
function writeAbsent(field: PlainField, column: ColumnBytes): void {
  const { absent } = field;
  if (absent === null) {
    column.nulls++;
    return;
  }
  if (column.nulls > 0) column.writeNulls();
  const out = column.reserve(absent.length + 1);
  out.set(absent, column.length);
  out[column.length + absent.length] = COMMA;
  column.length += absent.length + 1;
  column.present++;
}

/** Whether b[start, start + length) is the name's bytes. */
function sameName(name: Uint8Array, b: Uint8Array, start: number, length: number): boolean {
  if (name.length !== length) return false;
  for (let i = 0; i < length; i++) if (name[i] !== b[start + i]) return false;
  return true;
}

function isOneOf(b: Uint8Array, start: number, length: number, values: readonly Uint8Array[]): boolean {
  for (const value of values) {
    if (value.length !== length) continue;
    let same = true;
    for (let i = 0; i < length; i++) {
      if (value[i] !== b[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return true;
  }
  return false;
}
