/**
 * CSV records (RFC 4180) from text that arrives in pieces, each record with the line it starts on.
 * Written here rather than taken from csv-parse or papaparse
 * (docs/decisions/0090-csv-reader.md): both took about 2 s for a million short rows on this
 * project's machine, csv-parse 3.6-7 s
 * once asked for the raw record or its line numbers, and its count takes a CRLF inside a quoted value
 * for two lines. This reader keeps only what a job needs: a delimiter, quoted values with doubled
 * quotes, LF, CRLF or CR between records, and the longest record.
 *
 * A quote inside an unquoted value is kept as it is (as Excel writes `5" screen`); text after the
 * closing quote of a quoted value, before the next delimiter, is an error.
 */

export class CsvProblem extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
    this.name = 'CsvProblem';
  }
}

export interface CsvRecord {
  line: number;
  cells: string[];
  /** Characters of the record's text, its line break included. */
  chars: number;
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/** Parses pieces of text: push() each piece, then end(). Each returns the records it completed. */
export class CsvRecords {
  readonly #delimiter: number;
  readonly #maxChars: number;
  /** Text of a record not yet complete, carried to the next piece. */
  #rest = '';
  /** The line the next record starts on. */
  #line: number;

  /**
   * `line`: the line the text starts on; `rest`: the text of a record begun before it (a text that is
   * part of a file: src/jobs/file-chunks.ts).
   */
  constructor(delimiter: string, maxRecordChars: number, line = 1, rest = '') {
    this.#delimiter = delimiter.charCodeAt(0);
    this.#maxChars = maxRecordChars;
    this.#line = line;
    this.#rest = rest;
  }

  /** The text of a record not complete yet ('' when the text pushed ended at a record's end). */
  get rest(): string {
    return this.#rest;
  }

  /** The line the next record starts on (that of `rest`, when there is one). */
  get line(): number {
    return this.#line;
  }

  push(piece: string): CsvRecord[] {
    if (this.#rest === '') return this.#parse(piece, false);
    // The record carried over is completed by the piece's first line, parsed on its own, and the rest
    // of the piece parsed as it is: a slice of the decoded text that the cells slice in turn, never
    // copied into a joined string (64 KiB a piece that young-generation collections then copy too).
    const lf = piece.indexOf('\n');
    if (lf < 0) return this.#parse(this.#rest + piece, false);
    const first = this.#parse(this.#rest + piece.slice(0, lf + 1), false);
    // A quoted value going on past that line: the record is still open.
    const after = piece.slice(lf + 1);
    const more = this.#parse(this.#rest === '' ? after : this.#rest + after, false);
    return first.length === 0 ? more : first.concat(more);
  }

  end(): CsvRecord[] {
    return this.#parse(this.#rest, true);
  }

  #parse(text: string, final: boolean): CsvRecord[] {
    const records: CsvRecord[] = [];
    const delimiter = this.#delimiter;
    const length = text.length;
    const delimiterText = String.fromCharCode(delimiter);
    let at = 0;
    // Where the next quote and the next CR are (searched again once passed): a record before both,
    // ended by an LF, is cut at its delimiters by split, without a look at each character.
    let quoteAt = -1;
    let crAt = -1;
    this.#rest = '';
    while (at < length) {
      const start = at;
      const startLine = this.#line;
      if (quoteAt < at) quoteAt = indexOrEnd(text, '"', at);
      if (crAt < at) crAt = indexOrEnd(text, '\r', at);
      const lf = text.indexOf('\n', at);
      if (lf >= 0 && quoteAt > lf && (crAt > lf || crAt === lf - 1)) {
        const chars = lf + 1 - at;
        if (chars > this.#maxChars) throw this.#tooLong(startLine);
        records.push({
          line: startLine,
          cells: text.slice(at, crAt === lf - 1 ? crAt : lf).split(delimiterText),
          chars,
        });
        this.#line = startLine + 1;
        at = lf + 1;
        continue;
      }
      const cells: string[] = [];
      let breaks = 0;
      let complete = false;
      // One record: cells until a line break or the end of the text.
      for (;;) {
        if (at < length && text.charCodeAt(at) === QUOTE) {
          // A quoted value: up to the quote not doubled.
          let value = '';
          let from = at + 1;
          let close = -1;
          for (;;) {
            const quote = text.indexOf('"', from);
            if (quote < 0) break;
            if (text.charCodeAt(quote + 1) === QUOTE) {
              value += text.slice(from, quote + 1);
              from = quote + 2;
              continue;
            }
            if (quote + 1 === length && !final) break; // the next piece may start with a quote
            value += text.slice(from, quote);
            close = quote;
            break;
          }
          if (close < 0) break; // the record goes on in the next piece (or never closes)
          breaks += breaksIn(value);
          cells.push(value);
          at = close + 1;
          if (at === length) {
            if (final) complete = true;
            break;
          }
          const next = text.charCodeAt(at);
          if (next === delimiter) {
            at++;
            continue;
          }
          if (next === LF || next === CR) {
            const ended = lineEnd(text, at, final);
            if (ended < 0) break;
            at = ended;
            complete = true;
            break;
          }
          throw new CsvProblem(
            `Line ${(startLine + breaks).toLocaleString('en-US')}: a quoted value is followed by more text before the delimiter`,
            startLine + breaks,
          );
        }
        // An unquoted value: up to the delimiter or the line break.
        let end = at;
        let c = 0;
        while (end < length) {
          c = text.charCodeAt(end);
          if (c === delimiter || c === LF || c === CR) break;
          end++;
        }
        if (end === length) {
          if (!final) break;
          cells.push(text.slice(at, end));
          at = end;
          complete = true;
          break;
        }
        cells.push(text.slice(at, end));
        if (c === delimiter) {
          at = end + 1;
          if (at === length && final) {
            cells.push('');
            complete = true;
            break;
          }
          continue;
        }
        const ended = lineEnd(text, end, final);
        if (ended < 0) break;
        at = ended;
        complete = true;
        break;
      }
      if (!complete) {
        // Not complete in this text: kept for the next piece, or, at the end, a quote never closed.
        if (final) {
          throw new CsvProblem(
            `A quoted value is never closed (it opens on line ${startLine.toLocaleString('en-US')})`,
            startLine,
          );
        }
        this.#rest = text.slice(start);
        if (this.#rest.length > this.#maxChars) throw this.#tooLong(startLine);
        return records;
      }
      if (at - start > this.#maxChars) throw this.#tooLong(startLine);
      this.#line = startLine + breaks + 1;
      records.push({ line: startLine, cells, chars: at - start });
    }
    return records;
  }

  #tooLong(line: number): CsvProblem {
    return new CsvProblem(
      `Line ${line.toLocaleString('en-US')}: the row is longer than the longest row allowed (${this.#maxChars.toLocaleString('en-US')} characters)`,
      line,
    );
  }
}

/**
 * Where the text after the line break at `at` starts (CRLF is one break), or -1 when a CR ends a piece
 * that is not the last (its LF may come first in the next one).
 */
function lineEnd(text: string, at: number, final: boolean): number {
  if (text.charCodeAt(at) === LF) return at + 1;
  if (at + 1 < text.length) return text.charCodeAt(at + 1) === LF ? at + 2 : at + 1;
  return final ? at + 1 : -1;
}

/** Line breaks inside a quoted value: each LF, and each CR not followed by one. */
function breaksIn(value: string): number {
  let breaks = 0;
  for (let at = value.indexOf('\n'); at >= 0; at = value.indexOf('\n', at + 1)) breaks++;
  for (let at = value.indexOf('\r'); at >= 0; at = value.indexOf('\r', at + 1)) {
    if (value.charCodeAt(at + 1) !== LF) breaks++;
  }
  return breaks;
}

/** The position of `search` in `text` from `from`, or the text's length when it is not there. */
function indexOrEnd(text: string, search: string, from: number): number {
  const at = text.indexOf(search, from);
  return at < 0 ? text.length : at;
}
