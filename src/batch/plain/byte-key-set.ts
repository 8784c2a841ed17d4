import { randomInt } from 'node:crypto';

/** Held in place of a body once it is let go. */
const EMPTY = new Uint8Array(0);

/** FNV-1a's offset basis, mixed with a number drawn when the process starts. */
const HASH_SEED = (0x811c9dc5 ^ randomInt(0x7fffffff)) | 0;
/** At most this many slots looked at per key: 10,000 keys fill a third of the table, a few each. */
export const MAX_PROBES = 32;

/**
 * The first key parts of one body, by their bytes: open addressing over an FNV-1a hash, no string
 * made. Its tables are reused from body to body (a slot belongs to this body when its round is the
 * current one); they hold up to MAX_BATCH_ITEMS keys at most half full.
 */
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
