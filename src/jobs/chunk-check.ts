import type { FieldError } from '../batch/batch-errors.js';
import { checkRowFields, keyOf, sentKeyText } from '../batch/check-block.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { StagedText } from '../sql/job-staging.js';
import { blocksOf, fileShape } from './file-blocks.js';
import type { FileChunk } from './file-chunks.js';
import { FileProblem, type FileRow, fileRows, itemOf, type TextEnd, type TextStart } from './file-rows.js';
import { type JoinedTexts, joinTexts, noTexts } from './joined-texts.js';
import { hashKey } from './repeated-keys.js';

/*
 * A chunk of a job's file checked (src/jobs/file-chunks.ts), in a worker thread
 * (src/jobs/chunk-worker.ts): its rows read from where the chunk starts, checked by the batch rules
 * in the blocks the check reads (src/jobs/file-blocks.ts) without the reference rule (a query: the
 * main thread asks it, checkFile in src/jobs/job-check.ts), and the valid rows' COPY text made for the staging
 * tables. What comes back is small beside the rows, and cheap to send: typed arrays, the COPY text's
 * bytes, strings joined in one (src/jobs/joined-texts.ts), and the failed rows' problems.
 */

/** What a chunk's check needs: the chunk, and what the file's rows before it left. */
export interface ChunkTask {
  /** The resource's name (resource.name). */
  resource: string;
  format: 'csv' | 'ndjson';
  delimiter: string;
  chunk: FileChunk;
  /** A CSV's header, read in an earlier chunk. */
  header?: string[] | undefined;
  /** The text of a row begun in an earlier chunk, and the line it starts on (else the chunk's). */
  rest?: { text: string; line: number };
  /** The valid rows' COPY text is made (false once a job that rejects has an invalid row). */
  stage: boolean;
}

export interface CheckedChunk {
  /** The chunk's bytes, given back (they moved to the thread: a chunk may be checked again). */
  bytes: Uint8Array;
  /** Per row read, its line. */
  lines: Float64Array;
  /** The rows invalid by their fields, in file order: index in `lines`, key as sent, problems. */
  failed: { at: number; key: string; errors: FieldError[] }[];
  /** The valid rows' indexes in `lines`. */
  valid: Int32Array;
  /** Per valid row, its key (keyOf: repeated keys are found by it), and its two hashes (hashKey); with `stage`. */
  keys: JoinedTexts;
  keyHashes: Uint32Array;
  /** Per valid row, where its COPY text ends in `staged` (and in `stagedItems`); with `stage`. */
  stagedEnds: Int32Array;
  itemEnds: Int32Array;
  staged: Uint8Array;
  stagedItems: Uint8Array | undefined;
  /** With a reference (resource.reference): the keys the rows name, each once (CheckedRows.references). */
  referred: string[];
  /** With a reference: per row, the index in `referred` of the key it names, -1 for none. */
  referredAt: Int32Array;
  /** With a reference: per valid row, its key as sent (a row the reference rule fails needs it). */
  validKeyTexts: JoinedTexts;
  /** Where the chunk's text ended: the next chunk starts there (a speculation checked by it). */
  end: TextEnd;
  /** The file cannot be read as rows at a row of the chunk (after those above): the job fails so. */
  problem?: string;
}

const freeTexts = new Map<BatchResource, StagedText[]>();

/**
 * The COPY text of a chunk's rows, made in the same buffers chunk after chunk (a thread's): new ones
 * each time left megabytes of memory outside the heap to each chunk, which V8 collects only once
 * tens of them are dead. What a chunk's check returns is a copy of its part; then it gives the
 * buffers back (freeText). Checks that run at once in one thread (a test's) take one each.
 */
function takeText(resource: BatchResource): StagedText {
  const staged = freeTexts.get(resource)?.pop() ?? new StagedText(resource);
  staged.clear();
  return staged;
}

function freeText(staged: StagedText): void {
  const free = freeTexts.get(staged.resource) ?? [];
  free.push(staged);
  freeTexts.set(staged.resource, free);
}

/** The memory a chunk's check returns in, moved between threads rather than copied. */
export function memoryOf(checked: CheckedChunk): ArrayBuffer[] {
  const views = [
    checked.bytes,
    checked.lines,
    checked.valid,
    checked.stagedEnds,
    checked.itemEnds,
    checked.staged,
    checked.keys.ends,
    checked.keyHashes,
    checked.referredAt,
    checked.validKeyTexts.ends,
  ];
  if (checked.stagedItems) views.push(checked.stagedItems);
  return views.map((view) => view.buffer as ArrayBuffer);
}

/** A row's key as sent, for its result line. */
export function keyText(resource: BatchResource, row: FileRow): string {
  const item = itemOf(row, resource.key);
  return typeof item === 'object' && item !== null && !Array.isArray(item)
    ? sentKeyText(resource, item as Record<string, unknown>)
    : '{}';
}

/** The chunk's bytes, a piece at a time: the pieces a "not UTF-8" names. */
async function* piecesOf(chunk: FileChunk): AsyncGenerator<Uint8Array> {
  const { bytes, pieceStarts } = chunk;
  for (let at = 0; at < pieceStarts.length; at++) {
    yield bytes.subarray(pieceStarts[at], pieceStarts[at + 1] ?? bytes.byteLength);
  }
}

export async function checkChunk(resource: BatchResource, task: ChunkTask): Promise<CheckedChunk> {
  const { chunk } = task;
  const start: TextStart = {
    line: task.rest?.line ?? chunk.line,
    header: task.header,
    rest: task.rest?.text ?? '',
    atFileStart: chunk.first,
    more: chunk.more,
    pieceBytes: chunk.pieceBytes,
  };
  const end: TextEnd = { line: 0, rest: '' };
  const lines: number[] = [];
  const failed: CheckedChunk['failed'] = [];
  const valid: number[] = [];
  const keys: string[] = [];
  const stagedEnds: number[] = [];
  const itemEnds: number[] = [];
  const referred = new Map<string, number>();
  const referredAt: number[] = [];
  const validKeyTexts: string[] = [];
  const staged = takeText(resource);
  const withReference = resource.reference !== undefined;
  let problem: string | undefined;
  try {
    const rows = fileRows(piecesOf(chunk), fileShape(task, resource), start, end);
    for await (const block of blocksOf(rows)) {
      const checked = await checkRowFields(resource, block);
      for (let at = 0; at < block.length; at++) {
        const row = block[at]!;
        const index = lines.length;
        lines.push(row.line);
        if (withReference) {
          const name = checked.references[at];
          let named = name === undefined ? -1 : referred.get(name);
          if (named === undefined) {
            named = referred.size;
            referred.set(name!, named);
          }
          referredAt.push(named);
        }
        const errors = checked.errors[at];
        if (errors) {
          failed.push({ at: index, key: keyText(resource, row), errors });
          continue;
        }
        const values = checked.values[at]!;
        const key = keyText(resource, row);
        valid.push(index);
        if (withReference) validKeyTexts.push(key);
        if (!task.stage) continue;
        keys.push(keyOf(resource.keyPositions, values));
        staged.add(row.line, key, values);
        stagedEnds.push(staged.rows.byteLength);
        itemEnds.push(staged.items.byteLength);
      }
    }
  } catch (error) {
    if (!(error instanceof FileProblem)) {
      freeText(staged);
      throw error;
    }
    problem = error.message;
  }
  const result: CheckedChunk = {
    bytes: chunk.bytes,
    lines: Float64Array.from(lines),
    failed,
    valid: Int32Array.from(valid),
    keys: joinTexts(keys),
    keyHashes: hashesOf(keys),
    stagedEnds: Int32Array.from(stagedEnds),
    itemEnds: Int32Array.from(itemEnds),
    // Copies: a Buffer's slice() would be a view of this thread's buffer.
    staged: new Uint8Array(staged.rows.view()),
    stagedItems: resource.children ? new Uint8Array(staged.items.view()) : undefined,
    referred: [...referred.keys()],
    referredAt: Int32Array.from(referredAt),
    validKeyTexts: withReference ? joinTexts(validKeyTexts) : noTexts(),
    end,
    ...(problem === undefined ? {} : { problem }),
  };
  freeText(staged);
  return result;
}

/** Per key, its two hashes (hashKey), one after the other. */
function hashesOf(keys: readonly string[]): Uint32Array {
  const hashes = new Uint32Array(keys.length * 2);
  keys.forEach((key, at) => {
    hashKey(key, hashes, at * 2);
  });
  return hashes;
}
