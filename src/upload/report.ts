import cliProgress from 'cli-progress';
import type { RetryNotice } from './retry.js';

/**
 * What the upload command tells while it runs (extensions.md 15): on a terminal a progress bar
 * (bytes sent, then rows checked, then rows written, with rate and time left); elsewhere one line per
 * state change; with --json one JSON object a line per event. The summary line ends every run.
 */

export interface JobRows {
  received: number;
  invalid: number;
  created: number;
  updated: number;
  ignored: number;
}

export interface JobView {
  id: string;
  resource: string;
  format: string;
  on_invalid: string;
  delimiter: string | null;
  state: string;
  error: string | null;
  rows: JobRows;
  parts: { count: number; bytes: number };
  created_at: string;
  completed_at: string | null;
  finished_at: string | null;
}

export type UploadEvent =
  | { event: 'job'; id: string; state: string; resumed: boolean; parts_held: number; parts: number }
  | {
      event: 'part';
      id: string;
      part: number;
      parts: number;
      bytes: number;
      sent_bytes: number;
      total_bytes: number;
    }
  | ({ event: 'retry' } & RetryNotice)
  | { event: 'state'; id: string; state: string; rows: JobRows }
  | { event: 'results'; id: string; outcome: 'failed'; file: string; bytes: number }
  | {
      event: 'summary';
      id: string;
      state: string;
      error: string | null;
      rows: JobRows;
      problems: string[];
      exit: number;
    }
  | { event: 'queued'; id: string };

export interface Reporter {
  event(event: UploadEvent): void;
  /** A chunk read from the file for a part being sent (the bar's first phase), of `total` bytes. */
  bytes(chunk: Buffer, total: number): void;
  /** The job's counts as polled while it runs. */
  rows(job: JobView): void;
  close(): void;
}

const out = (line: string) => process.stdout.write(`${line}\n`);

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The summary line (text and bar). */
export function summaryLine(e: Extract<UploadEvent, { event: 'summary' }>): string {
  const r = e.rows;
  const counts = `${r.received} rows: ${r.created} created, ${r.updated} updated, ${r.ignored} ignored, ${r.invalid} invalid`;
  const why = e.error ? `: ${e.error}` : '';
  const problems = e.problems.length ? `; first problems: ${e.problems.join('; ')}` : '';
  return `job ${e.id} ${e.state}${why}; ${counts}${problems}`;
}

function textLine(e: UploadEvent): string | undefined {
  switch (e.event) {
    case 'job':
      return e.resumed
        ? `job ${e.id} ${e.state}: resumed, ${e.parts_held} of ${e.parts} parts held`
        : `job ${e.id} ${e.state}: ${e.parts} part${e.parts === 1 ? '' : 's'} to send`;
    case 'part':
      return `part ${e.part}/${e.parts} sent (${mib(e.bytes)}; ${mib(e.sent_bytes)} of ${mib(e.total_bytes)})`;
    case 'retry':
      return `retrying ${e.what} in ${(e.delayMs / 1000).toFixed(1)} s (attempt ${e.attempt} failed: ${e.reason})`;
    case 'state':
      return `job ${e.id} ${e.state}`;
    case 'results':
      return `failed rows written to ${e.file}`;
    case 'summary':
      return summaryLine(e);
    case 'queued':
      return e.id;
  }
}

export function jsonReporter(): Reporter {
  return { event: (e) => out(JSON.stringify(e)), bytes() {}, rows() {}, close() {} };
}

export function textReporter(): Reporter {
  return {
    event(e) {
      const line = textLine(e);
      if (line !== undefined) out(line);
    },
    bytes() {},
    rows() {},
    close() {},
  };
}

type Phase = 'sending' | 'checking' | 'writing';

/** The progress bar, one per phase; the lines of other events are printed above it. */
export function barReporter(): Reporter {
  let bar: cliProgress.SingleBar | undefined;
  let phase: Phase | undefined;
  let value = 0;
  let started = 0;
  // The rows' number is known only once they are checked: the lines counted in what was sent (scaled
  // to the file when a resumed run sent only some parts) stand for it until then.
  let lines = 0;
  let sent = 0;
  let fileBytes = 0;
  const estimatedRows = () => (sent > 0 ? Math.round((lines * fileBytes) / sent) : 0);
  const start = (next: Phase, total: number, unit: string) => {
    bar?.stop();
    phase = next;
    value = 0;
    started = Date.now();
    bar = new cliProgress.SingleBar(
      {
        format: `${next.padEnd(8)} [{bar}] {percentage}% | {value}/{total} ${unit} | {speed}/s | ETA {eta_formatted}`,
        stream: process.stdout,
        hideCursor: true,
        etaBuffer: 50,
        fps: 5,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(total, 1), 0, { speed: '0' });
  };
  const update = (to: number, total: number) => {
    value = to;
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    bar?.setTotal(Math.max(total, to, 1));
    bar?.update(to, { speed: String(Math.round(to / seconds)) });
  };
  const above = (line: string) => {
    // The bar's line is cleared, the message printed, the bar drawn again below it.
    if (bar) process.stdout.write('\r\x1b[2K');
    out(line);
    bar?.render();
  };
  return {
    event(e) {
      if (e.event === 'summary' || e.event === 'queued') {
        bar?.stop();
        bar = undefined;
      }
      if (e.event === 'part' || e.event === 'state') return;
      const line = textLine(e);
      if (line !== undefined) above(line);
    },
    bytes(chunk, total) {
      if (phase !== 'sending') start('sending', total, 'bytes');
      fileBytes = total;
      sent += chunk.length;
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
      update(value + chunk.length, total);
    },
    rows(job) {
      const r = job.rows;
      if (job.state === 'validating' || job.state === 'queued') {
        if (phase !== 'checking') start('checking', estimatedRows(), 'rows');
        update(r.received, estimatedRows());
      } else if (job.state === 'writing') {
        if (phase !== 'writing') start('writing', r.received - r.invalid, 'rows');
        update(r.created + r.updated + r.ignored, r.received - r.invalid);
      }
    },
    close() {
      bar?.stop();
    },
  };
}

export function reporterFor(json: boolean): Reporter {
  if (json) return jsonReporter();
  return process.stdout.isTTY ? barReporter() : textReporter();
}
