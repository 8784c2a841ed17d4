/*
 * A job's file cut into chunks that worker threads check side by side (src/jobs/chunk-check.ts):
 * each ends after a line break, and knows the line it starts on without being parsed, by counting
 * the line breaks before it (a byte search). A CSV value in quotes may hold a line break, so a chunk
 * may start inside a row: its check then reads it as rows that are not the file's, and the chunk is
 * checked again from where the one before ended (src/jobs/checked-chunks.ts), which only a row with a
 * line break inside a quoted value across the cut costs.
 */

const LF = 0x0a;
const CR = 0x0d;

/** Bytes of a chunk, about: the cut is at the first line break the pieces give from there. */
export const CHUNK_BYTES = 1024 * 1024;

export interface FileChunk {
  bytes: Uint8Array;
  /** The line its first byte is on (1: the file's first), counted as the format counts them. */
  line: number;
  /** Its first byte is the file's. */
  first: boolean;
  /** The file goes on after it. */
  more: boolean;
  /** Per stored piece the chunk's bytes come from, in order: its bytes in the file (for a "not UTF-8"). */
  pieceBytes: { start: number; end: number }[];
  /** Where each of those pieces' bytes start in the chunk (the first 0). */
  pieceStarts: number[];
}

interface Span {
  bytes: Uint8Array;
  /** Where in the file the stored piece these bytes are cut from starts and ends. */
  piece: { start: number; end: number };
}

/**
 * The stored pieces as chunks of about CHUNK_BYTES, each cut after a line break: an LF, or for CSV a
 * CR not followed by an LF (a CR whose next byte is not known yet is not cut after). Pieces without
 * a line break for `maxSpanBytes` make a chunk without one (its row is longer than any allowed: its
 * check finds so).
 */
export async function* fileChunks(
  pieces: AsyncIterable<Uint8Array>,
  format: 'csv' | 'ndjson',
  maxSpanBytes: number,
  chunkBytes = CHUNK_BYTES,
): AsyncGenerator<FileChunk> {
  let spans: Span[] = [];
  let bytes = 0;
  let offset = 0;
  let line = 1;
  let first = true;
  const chunkOf = (taken: Span[], more: boolean): FileChunk => {
    const chunk = joined(taken, line, first, more);
    line += lineBreaks(chunk.bytes, format);
    first = false;
    return chunk;
  };
  for await (const piece of pieces) {
    const span = { bytes: piece, piece: { start: offset, end: offset + piece.byteLength } };
    offset += piece.byteLength;
    if (piece.byteLength === 0) continue;
    spans.push(span);
    bytes += piece.byteLength;
    if (bytes < chunkBytes) continue;
    const cut = lastBreakEnd(piece, format);
    if (cut > 0) {
      const head = { bytes: piece.subarray(0, cut), piece: span.piece };
      const tail = { bytes: piece.subarray(cut), piece: span.piece };
      yield chunkOf([...spans.slice(0, -1), head], true);
      spans = tail.bytes.byteLength > 0 ? [tail] : [];
      bytes = tail.bytes.byteLength;
    } else if (bytes >= maxSpanBytes) {
      yield chunkOf(spans, true);
      spans = [];
      bytes = 0;
    }
  }
  // The last chunk, the file's end (empty when the file ends at a cut: its check ends the rows, a
  // quote never closed found there): also the first when the file is smaller than a chunk.
  yield chunkOf(spans, false);
}

/** Where the text after the piece's last line break starts, or 0 when it has none to cut after. */
function lastBreakEnd(piece: Uint8Array, format: 'csv' | 'ndjson'): number {
  const lf = piece.lastIndexOf(LF);
  if (format === 'ndjson') return lf + 1;
  // A CR after the last LF, not the piece's last byte (its LF may be the next piece's first).
  const cr = piece.lastIndexOf(CR, piece.byteLength - 2);
  return Math.max(lf, cr) + 1;
}

/**
 * The spans' bytes as one chunk, in memory of its own (never a view of a stored piece's buffer): its
 * memory moves to the thread that checks it and back, never copied (src/jobs/chunk-check-pool.ts).
 */
function joined(spans: Span[], line: number, first: boolean, more: boolean): FileChunk {
  const bytes = new Uint8Array(spans.reduce((sum, span) => sum + span.bytes.byteLength, 0));
  const pieceStarts: number[] = [];
  let at = 0;
  for (const span of spans) {
    pieceStarts.push(at);
    bytes.set(span.bytes, at);
    at += span.bytes.byteLength;
  }
  return { bytes, line, first, more, pieceBytes: spans.map((span) => span.piece), pieceStarts };
}

/**
 * The line breaks in the bytes as the format counts them: NDJSON its LFs; CSV its LFs and each CR
 * not followed by one (src/jobs/csv-records.ts). A chunk never ends between a CR and its LF.
 */
export function lineBreaks(bytes: Uint8Array, format: 'csv' | 'ndjson'): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let breaks = 0;
  for (let at = buffer.indexOf(LF); at >= 0; at = buffer.indexOf(LF, at + 1)) breaks++;
  if (format === 'ndjson') return breaks;
  for (let at = buffer.indexOf(CR); at >= 0; at = buffer.indexOf(CR, at + 1)) {
    if (buffer[at + 1] !== LF) breaks++;
  }
  return breaks;
}
