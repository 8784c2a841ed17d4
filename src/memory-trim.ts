import { createRequire } from 'node:module';

/**
 * glibc's malloc keeps the memory a process freed, and hands back only what lies at the top of its
 * heap: what PGlite's WebAssembly compilation, the migrations and a batch's parse left behind stays
 * resident, scattered under live allocations. Measured on the embedded default at rest after its first
 * start, 55-75 MB of the 190-240 MB were such free pages
 * (docs/decisions/0125-malloc-trim-when-quiet.md). malloc_trim(0) returns every free page to the
 * system, in a few milliseconds;
 * Node offers no call for it, so it is reached through koffi, a foreign function interface.
 *
 * It runs once the process has answered nothing for a while and runs no bulk job: under load the
 * freed memory is reused at once, and handing it back would only make the next request fault it in
 * again.
 */

/** Hands the free pages of every malloc arena back to the system. */
export type Trim = () => void;

/** malloc_trim of this process's C library, or undefined where there is none (not glibc, not Linux). */
export function loadMallocTrim(): Trim | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t)') as (pad: number) => number;
    return () => {
      trim(0);
    };
  } catch {
    // musl and other C libraries have no malloc_trim, or koffi has no build for this machine.
    return undefined;
  }
}

/** After the last request ended, how long the process stays quiet before its memory is trimmed. */
export const QUIET_MS = 1_000;

/**
 * A trim is worth its few milliseconds only when there is something to hand back: the process grew
 * by this much since the last trim. A health probe every few seconds then trims nothing.
 */
export const MIN_GROWTH_BYTES = 8 * 1024 * 1024;

/**
 * Trims once the process has been quiet for quietMs: armed by quiet() (the start, or the last
 * request in flight ending), put off by another quiet() before then, skipped if work is in progress
 * when it is due (a request, a bulk job) or if the process grew less than MIN_GROWTH_BYTES since the
 * last trim. One trim per quiet spell: nothing new to hand back until requests come.
 */
export class QuietTrim {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** The resident size after the last trim. */
  #trimmedTo: number | undefined;

  constructor(
    private readonly trim: Trim,
    private readonly busy: () => boolean,
    private readonly quietMs = QUIET_MS,
    private readonly rss: () => number = () => process.memoryUsage.rss(),
  ) {}

  /** The process has nothing to answer now. */
  quiet(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped || this.busy()) return;
      if (this.#trimmedTo !== undefined && this.rss() - this.#trimmedTo < MIN_GROWTH_BYTES) return;
      this.trim();
      this.#trimmedTo = this.rss();
    }, this.quietMs);
    // A pending trim never keeps the process alive.
    this.#timer.unref();
  }

  /** No trim from now on (the server is closing; requests that end meanwhile arm none). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
