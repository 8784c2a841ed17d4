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
 * Bytes of the file decoded, and text parsed, at once (see utf8Text): the rows of a slice are checked
 * before the next is parsed, so few rows are alive when V8 collects its young generation, and they
 * die there instead of being promoted and collected again (checked in-process, back to back, slices
 * of 64 Ki characters and blocks of 128 Ki against both at 16 Ki: 1,000,000 prices 6.1 to 5.1-5.3 s,
 * 200,000 customers of 1 KiB 8.0-8.6 to 7.5-7.8 s).
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
 * Where a text that is part of a file (a chunk: src/jobs/file-chunks.ts) starts, and what the rows
 * before it left: the whole file when absent.
 */
export interface TextStart {
  /** The line its first character is on. */
  line: number;
  /** A CSV's header, read before the text. */
  header?: string[] | undefined;
  /** The text of a CSV row begun before the text (its line is `line`). */
  rest?: string;
  /** The file's first byte is the text's: only there is a BOM dropped. */
  atFileStart: boolean;
  /** The file goes on after the text: a row not ended there is left in TextEnd, not refused. */
  more: boolean;
  /** Per piece of the text, the bytes of the stored piece it is cut from: what a "not UTF-8" names. */
  pieceBytes?: readonly { start: number; end: number }[];
}

/** What a text that is part of a file left for the next (filled in once its rows are all read). */
export interface TextEnd {
  /** The line the next text starts on, or the line of `rest`. */
  line: number;
  /** A CSV row not ended in the text ('' when it ended at a row's end). */
  rest: string;
  header?: string[] | undefined;
}

const WHOLE_FILE: TextStart = { line: 1, atFileStart: true, more: false };

/**
 * The file's rows, in file order, a run of them per piece of the file (a row at a time would cost an
 * await each: a second per million rows). Throws FileProblem when the file cannot be read as rows.
 * With `start` and `end`: the rows of a part of the file (src/jobs/file-chunks.ts).
 */
export function fileRows(
  chunks: AsyncIterable<Uint8Array>,
  shape: FileShape,
  start: TextStart = WHOLE_FILE,
  end?: TextEnd,
): AsyncGenerator<FileRow[]> {
  const text = utf8Text(chunks, start);
  return shape.format === 'ndjson'
    ? ndjsonRows(text, shape.maxRowChars, start, end)
    : csvRows(text, shape, start, end);
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The bytes as text, refusing what is not UTF-8 (a BOM at the file's start is dropped). A text that
 * the file goes on after ends where its last whole character does (the file is cut at line breaks).
 */
async function* utf8Text(chunks: AsyncIterable<Uint8Array>, start: TextStart): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: !start.atFileStart });
  let offset = 0;
  let piece = 0;
  let sinceTurn = 0;
  for await (const chunk of chunks) {
    // Decoded a slice at a time: a piece's text in one string (1 MiB) is a large object, which only
    // a full collection frees; slices die young with the rows read from them.
    for (let from = 0; from < chunk.byteLength; from += TEXT_SLICE) {
      let text: string;
      try {
        text = decoder.decode(chunk.subarray(from, from + TEXT_SLICE), { stream: true });
      } catch {
        const bytes = start.pieceBytes?.[piece] ?? { start: offset, end: offset + chunk.byteLength };
        throw new FileProblem(
          `The file is not UTF-8 (in its bytes ${count(bytes.start)} to ${count(bytes.end)})`,
        );
      }
      // A turn of the event loop every few slices: a whole piece (1 MiB, 30,000 short rows) would
      // hold every other request of the process for tens of ms.
      if (sinceTurn >= TURN_CHARS) {
        await nextTurn();
        sinceTurn = 0;
      }
      sinceTurn += text.length;
      if (text.length > 0) yield text;
    }
    offset += chunk.byteLength;
    piece++;
  }
  if (start.more) return;
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

async function* csvRows(
  text: AsyncIterable<string>,
  shape: FileShape,
  start: TextStart,
  end: TextEnd | undefined,
): AsyncGenerator<FileRow[]> {
  const parser = new CsvRecords(shape.delimiter, shape.maxRowChars, start.line, start.rest);
  const known = new Set(shape.fieldNames);
  let header: string[] | undefined;
  let isKnown: boolean[] = [];
  // Set when every column of the header names a field: the rows then keep their cells.
  let columns: CsvColumns | undefined;
  const readHeader = (cells: readonly string[]) => {
    header = headerOf(cells);
    isKnown = header.map((name) => known.has(name));
    if (isKnown.every(Boolean)) {
      const byName = new Map(header.map((name, at) => [name, at]));
      columns = { ofField: shape.fieldNames.map((name) => byName.get(name) ?? -1), byName };
    }
  };
  if (start.header) readHeader(start.header);
  const rowsOf = (records: readonly CsvRecord[]): FileRow[] => {
    const rows: FileRow[] = [];
    for (const { line, cells, chars } of records) {
      // An empty line is no row.
      if (cells.length === 1 && cells[0] === '') continue;
      if (!header) {
        readHeader(cells);
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
    if (start.more) {
      if (end) Object.assign(end, { line: parser.line, rest: parser.rest, header });
      return;
    }
    const rows = rowsOf(parser.end());
    if (rows.length > 0) yield rows;
  } catch (error) {
    throw error instanceof CsvProblem ? new FileProblem(error.message) : error;
  }
  if (!header) throw new FileProblem('The file has no header row');
}

async function* ndjsonRows(
  text: AsyncIterable<string>,
  maxRowChars: number,
  start: TextStart,
  end: TextEnd | undefined,
): AsyncGenerator<FileRow[]> {
  const tooLong = (line: number) =>
    new FileProblem(
      `Line ${count(line)} is longer than the longest row allowed (${count(maxRowChars)} characters)`,
    );
  let pending = start.rest ?? '';
  // Lines read so far.
  let line = start.line - 1;
  for await (const piece of text) {
    const rows: FileRow[] = [];
    let from = 0;
    for (let lf = piece.indexOf('\n'); lf >= 0; lf = piece.indexOf('\n', from)) {
      const lineText = pending + piece.slice(from, lf);
      pending = '';
      from = lf + 1;
      line++;
      if (lineText.length > maxRowChars) throw tooLong(line);
      const row = ndjsonRow(line, lineText);
      if (row) rows.push(row);
    }
    pending += piece.slice(from);
    if (pending.length > maxRowChars) throw tooLong(line + 1);
    if (rows.length > 0) yield rows;
  }
  if (start.more) {
    if (end) Object.assign(end, { line: line + 1, rest: pending });
    return;
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
