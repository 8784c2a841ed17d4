/**
 * Which keys of a job's file occur more than once (extensions.md 5 over the whole file: of an upsert
 * the last occurrence of a key wins, of an insert-if-absent the first; every other one is ignored).
 * The file can hold millions of keys, so not every key is remembered: a Bloom filter notes each key,
 * and only a key it may have seen before (a repeat, or now and then a false alarm) is kept exactly,
 * with its last line. Every repeated key is therefore in the exact map, and a key that is not there
 * occurs once: the answer is exact, and memory is the filter (about 2 bits per byte of file over 16,
 * at most 64 MiB) plus the repeats.
 *
 * The filter is blocked: a key's probes all fall in one block of 512 bits (a cache line), chosen by
 * one hash, so a key costs one miss of the CPU's cache where five spread probes cost five (a 1 GiB
 * file's 64 MiB filter fits no cache: 1,000,000 keys took 450-505 ms spread, 339-430 ms blocked). A
 * blocked filter has a few more false alarms at the same size (8 keys of 200,000 in its test), each
 * an entry in the map.
 */
export class RepeatedKeys {
  readonly #bits: Uint32Array;
  /** Blocks of the filter, less one (their count is a power of 2). */
  readonly #blockMask: number;
  readonly #lastLine = new Map<string, number>();

  /** `fileBytes`: the file's size; rows are rarely shorter than 16 bytes, so this sizes the filter. */
  constructor(fileBytes: number) {
    // At least 16 bits per row of 16 bytes: few false alarms (each costs an entry in the map).
    const wanted = Math.max(2 ** 16, Math.min(2 ** 29, fileBytes));
    const bits = 2 ** Math.ceil(Math.log2(wanted));
    this.#bits = new Uint32Array(bits / 32);
    this.#blockMask = bits / BLOCK_BITS - 1;
  }

  /** Notes that `key` occurs at `line` (lines come in file order). */
  add(key: string, line: number): void {
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c;
    for (let at = 0; at < key.length; at++) {
      const c = key.charCodeAt(at);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    // Sequential keys (codes) hash to neighbours: both hashes are mixed before their bits are used.
    const block = (mixed(h1) & this.#blockMask) * BLOCK_WORDS;
    h2 = mixed(h2);
    const step = (h2 >>> 16) | 1;
    let seen = true;
    for (let probe = 0; probe < PROBES; probe++) {
      const bit = (h2 + Math.imul(probe, step)) & (BLOCK_BITS - 1);
      const word = block + (bit >>> 5);
      const flag = 1 << (bit & 31);
      if ((this.#bits[word]! & flag) === 0) {
        seen = false;
        this.#bits[word]! |= flag;
      }
    }
    if (seen || this.#lastLine.has(key)) this.#lastLine.set(key, line);
  }

  /**
   * A line of every key kept exactly (its last, after every line was added): every key that occurs
   * more than once is among them, so every row another of the file replaces has the key of one of these.
   */
  repeatedLines(): number[] {
    return [...this.#lastLine.values()];
  }
}

/** MurmurHash3's finalizer: every bit of the result depends on every bit of `h`. */
function mixed(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Bits of a block of the filter (64 bytes), its words, and the probes of a key in it. */
const BLOCK_BITS = 512;
const BLOCK_WORDS = BLOCK_BITS / 32;
const PROBES = 5;
