import { setImmediate as nextTurn } from 'node:timers/promises';
import { parseJsonText } from '../fields/json-text.js';
import { CsvProblem, type CsvRecord, CsvRecords } from './csv-records.js';

/*
 * A bulk job's file as rows (extensions.md 12), read as a stream: the parts' bytes in, one batch item
 * per row out, each with its line in the file. Memory stays bounded by the longest row allowed, never
 * the file: a row longer than that, a quote never closed, bytes that are not UTF-8 end the file with
 * a FileProblem (the job fails with its message). What the batch rules check (fields, values) is left
 * to them: a row only has to become the object a batch array would hold.
 */

/** The file cannot be read as rows at all: the job fails with this message. */
export class FileProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileProblem';
  }
}

export interface FileRow {
  /** The row's first line in the file (1 is a CSV's header, or the first NDJSON line). */
  line: number;
  /**
   * The row as a batch item: an NDJSON line's value, or an object of a CSV row's cells when the
   * header names a column that is no field (the row is invalid by it).
   */
  item: unknown;
  /**
   * A CSV row whose header names only fields: its cells, checked as the item they make without
   * making it (validateCellRows), the columns read by `columns`.
   */
  cells?: readonly string[];
  columns?: CsvColumns;
  /** What makes the row invalid before any field is looked at (a CSV row with another number of cells). */
  problem?: string | undefined;
  /** Characters of the row's text: what the row costs in memory, roughly (blocks are bounded by it too). */
  chars: number;
}

/** A CSV header that names only fields of the table: where each field's cell is. */
export interface CsvColumns {
  /** Per field (in the table's order, FileShape.fieldNames): its column, or -1. */
  ofField: readonly number[];
  /** Per field name: its column. */
  byName: ReadonlyMap<string, number>;
}

/**
 * The item a row stands for, of the named fields only (a key's, for a result line): an NDJSON line's
 * value as it is, a CSV row's non-empty cells of those names.
 */
export function itemOf(row: FileRow, names: readonly string[]): unknown {
  if (!row.cells) return row.item;
  const item: Record<string, string> = {};
  for (const name of names) {
    const column = row.columns!.byName.get(name);
    const cell = column === undefined ? '' : row.cells[column]!;
    if (cell !== '') item[name] = cell;
  }
  return item;
}

export interface FileShape {
  format: 'csv' | 'ndjson';
  /** A CSV's delimiter. */
  delimiter: string;
  /** The batch fields: a CSV header names them (another name makes every row invalid). */
  fieldNames: readonly string[];
  /** The longest row, in characters. */
  maxRowChars: number;
}

/**
 * Characters of text parsed at once (see utf8Text): the rows of a slice are checked before the next
 * is parsed, so few rows are alive when V8 collects its young generation, and they die there instead
 * of being promoted and collected again (checked in-process, back to back, slices of 64 Ki characters
 * and blocks of 128 Ki against both at 16 Ki: 1,000,000 prices 6.1 to 5.1-5.3 s, 200,000 customers of
 * 1 KiB 8.0-8.6 to 7.5-7.8 s).
 */
const TEXT_SLICE = 16 * 1024;
/**
 * Characters parsed between two turns of the event loop, fewer turns than slices: with a turn per
 * slice, 200,000 customers were checked in 11.8-12.9 s with slices of 8 Ki characters and in 8.9-9.6
 * s with slices of 16 Ki (blocks of 8 Ki both).
 */
const TURN_CHARS = 64 * 1024;

/** More columns than any field table has by far: a header past it is not a header. */
export const MAX_COLUMNS = 1_000;

/**
 * The file's rows, in file order, a run of them per piece of the file (a row at a time would cost an
 * await each: a second per million rows). Throws FileProblem when the file cannot be read as rows.
 */
export function fileRows(chunks: AsyncIterable<Uint8Array>, shape: FileShape): AsyncGenerator<FileRow[]> {
  const text = utf8Text(chunks);
  return shape.format === 'ndjson' ? ndjsonRows(text, shape.maxRowChars) : csvRows(text, shape);
}

const count = (n: number) => n.toLocaleString('en-US');

/** The bytes as text, refusing what is not UTF-8 (a BOM at the start is dropped). */
async function* utf8Text(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let offset = 0;
  let sinceTurn = 0;
  for await (const chunk of chunks) {
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      throw new FileProblem(
        `The file is not UTF-8 (in its bytes ${count(offset)} to ${count(offset + chunk.byteLength)})`,
      );
    }
    offset += chunk.byteLength;
    // In slices, a turn of the event loop every few: a whole piece (1 MiB, 30,000 short rows) would
    // hold every other request of the process for tens of ms.
    for (let at = 0; at < text.length; at += TEXT_SLICE) {
      if (sinceTurn >= TURN_CHARS) {
        await nextTurn();
        sinceTurn = 0;
      }
      const slice = text.slice(at, at + TEXT_SLICE);
      sinceTurn += slice.length;
      yield slice;
    }
  }
  let rest: string;
  try {
    rest = decoder.decode();
  } catch {
    throw new FileProblem('The file is not UTF-8 (it ends inside a character)');
  }
  if (rest.length > 0) yield rest;
}

/** An own property, even for a name Object.prototype has ("__proto__" never sets a prototype). */
function setOwn(item: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(item, name, { value, enumerable: true, writable: true, configurable: true });
}

/** The header row checked: names each once, at most MAX_COLUMNS of them. */
function headerOf(record: readonly string[]): string[] {
  if (record.length > MAX_COLUMNS) {
    throw new FileProblem(
      `The header row has ${count(record.length)} columns; at most ${count(MAX_COLUMNS)} are read`,
    );
  }
  const seen = new Set<string>();
  for (const name of record) {
    if (seen.has(name)) throw new FileProblem(`The header row names ${JSON.stringify(name)} more than once`);
    seen.add(name);
  }
  return [...record];
}

async function* csvRows(text: AsyncIterable<string>, shape: FileShape): AsyncGenerator<FileRow[]> {
  const parser = new CsvRecords(shape.delimiter, shape.maxRowChars);
  const known = new Set(shape.fieldNames);
  let header: string[] | undefined;
  let isKnown: boolean[] = [];
  // Set when every column of the header names a field: the rows then keep their cells.
  let columns: CsvColumns | undefined;
  const rowsOf = (records: readonly CsvRecord[]): FileRow[] => {
    const rows: FileRow[] = [];
    for (const { line, cells, chars } of records) {
      // An empty line is no row.
      if (cells.length === 1 && cells[0] === '') continue;
      if (!header) {
        header = headerOf(cells);
        isKnown = header.map((name) => known.has(name));
        if (isKnown.every(Boolean)) {
          const byName = new Map(header.map((name, at) => [name, at]));
          columns = { ofField: shape.fieldNames.map((name) => byName.get(name) ?? -1), byName };
        }
        continue;
      }
      if (cells.length !== header.length) {
        rows.push({
          line,
          item: undefined,
          problem: `The row has ${count(cells.length)} cells; the header row has ${count(header.length)}`,
          chars,
        });
        continue;
      }
      if (columns) {
        rows.push({ line, item: undefined, cells, columns, chars });
        continue;
      }
      const item: Record<string, unknown> = {};
      for (let at = 0; at < header.length; at++) {
        const cell = cells[at]!;
        // An empty cell is an absent value; an unknown column is kept, so the row is invalid by it.
        if (isKnown[at]) {
          if (cell !== '') item[header[at]!] = cell;
        } else {
          setOwn(item, header[at]!, cell);
        }
      }
      rows.push({ line, item, chars });
    }
    return rows;
  };
  try {
    for await (const piece of text) {
      const rows = rowsOf(parser.push(piece));
      if (rows.length > 0) yield rows;
    }
    const rows = rowsOf(parser.end());
    if (rows.length > 0) yield rows;
  } catch (error) {
    throw error instanceof CsvProblem ? new FileProblem(error.message) : error;
  }
  if (!header) throw new FileProblem('The file has no header row');
}

async function* ndjsonRows(text: AsyncIterable<string>, maxRowChars: number): AsyncGenerator<FileRow[]> {
  const tooLong = (line: number) =>
    new FileProblem(
      `Line ${count(line)} is longer than the longest row allowed (${count(maxRowChars)} characters)`,
    );
  let pending = '';
  let line = 0;
  for await (const piece of text) {
    const rows: FileRow[] = [];
    let start = 0;
    for (let end = piece.indexOf('\n'); end >= 0; end = piece.indexOf('\n', start)) {
      const lineText = pending + piece.slice(start, end);
      pending = '';
      start = end + 1;
      line++;
      if (lineText.length > maxRowChars) throw tooLong(line);
      const row = ndjsonRow(line, lineText);
      if (row) rows.push(row);
    }
    pending += piece.slice(start);
    if (pending.length > maxRowChars) throw tooLong(line + 1);
    if (rows.length > 0) yield rows;
  }
  if (pending.length > 0) {
    const row = ndjsonRow(line + 1, pending);
    if (row) yield [row];
  }
}

/** One NDJSON line as a row; a blank line is none. */
function ndjsonRow(line: number, text: string): FileRow | undefined {
  const json = text.endsWith('\r') ? text.slice(0, -1) : text;
  if (json.trim() === '') return undefined;
  try {
    return { line, item: parseJsonText(json), chars: text.length };
  } catch {
    return { line, item: undefined, problem: 'The line is not valid JSON', chars: text.length };
  }
}
