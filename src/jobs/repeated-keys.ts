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
    hashKey(key, scratch, 0);
    if (this.note(scratch[0]!, scratch[1]!)) this.keep(key, line);
  }

  /**
   * Notes a key by its hashes (hashKey): true when the filter may have noted it before, and its key
   * must then be kept (keep). A key noted before has every bit set, so a false answer is always right.
   */
  note(h1: number, h2: number): boolean {
    const block = (h1 & this.#blockMask) * BLOCK_WORDS;
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
    return seen;
  }

  /** Keeps `key` exactly with `line`, its last so far: one the filter noted before (note). */
  keep(key: string, line: number): void {
    this.#lastLine.set(key, line);
  }

  /**
   * A line of every key kept exactly (its last, after every line was added): every key that occurs
   * more than once is among them, so every row another of the file replaces has the key of one of these.
   */
  repeatedLines(): number[] {
    return [...this.#lastLine.values()];
  }
}

/**
 * A key's two hashes, written at `at` and `at + 1` of `into`: what RepeatedKeys.note takes, made
 * where the key is (a worker thread checking a chunk sends them with the chunk).
 */
export function hashKey(key: string, into: Uint32Array, at: number): void {
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c;
  for (let c = 0; c < key.length; c++) {
    const code = key.charCodeAt(c);
    h1 = Math.imul(h1 ^ code, 0x01000193);
    h2 = Math.imul(h2 ^ code, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  // Sequential keys (codes) hash to neighbours: both hashes are mixed before their bits are used.
  into[at] = mixed(h1);
  into[at + 1] = mixed(h2);
}

const scratch = new Uint32Array(2);

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
