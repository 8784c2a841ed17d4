import { availableParallelism } from 'node:os';

/** The gate is full, for everyone or for this caller's address. Answered 503 with Retry-After. */
export class HashingBusy extends Error {
  override name = 'HashingBusy';
  readonly retryAfterSeconds = 1;
}

/**
 * A semaphore with a bounded queue for slow secret hashing (scrypt). scrypt runs on libuv's thread
 * pool (UV_THREADPOOL_SIZE threads, 4 by default), which compression and other crypto share: hashes
 * started by anonymous /token requests must never occupy all of it, and must not queue without bound
 * either. At most `concurrency` hashes run at once and up to `maxWaiting` more wait in arrival order;
 * one caller (an address) holds at most `perCaller` of those places, so a flood from one address
 * cannot make everybody else's token wait behind it. Beyond either bound run() refuses at once with
 * HashingBusy instead of queueing.
 */
export class HashingGate {
  readonly concurrency: number;
  readonly maxWaiting: number;
  readonly perCaller: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];
  /** Places (running or waiting) per caller; an entry lives only while the caller holds one. */
  readonly #held = new Map<string, number>();

  constructor(options: { concurrency: number; maxWaiting: number; perCaller: number }) {
    this.concurrency = options.concurrency;
    this.maxWaiting = options.maxWaiting;
    this.perCaller = options.perCaller;
  }

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(caller: string, hash: () => Promise<T>): Promise<T> {
    const held = this.#held.get(caller) ?? 0;
    const full = this.#running >= this.concurrency;
    if (held >= this.perCaller || (full && this.#waiting.length >= this.maxWaiting)) {
      throw new HashingBusy('Too many secrets being checked');
    }
    this.#held.set(caller, held + 1);
    try {
      if (full) {
        // The slot is handed over by the finishing hash: #running stays counted for this one.
        await new Promise<void>((resolve) => this.#waiting.push(resolve));
      } else {
        this.#running++;
      }
      try {
        return await hash();
      } finally {
        const next = this.#waiting.shift();
        if (next) next();
        else this.#running--;
      }
    } finally {
      const left = this.#held.get(caller)! - 1;
      if (left > 0) this.#held.set(caller, left);
      else this.#held.delete(caller);
    }
  }
}

/** libuv's thread pool size as this process sees it (Node reads UV_THREADPOOL_SIZE once at start). */
function threadPoolSize(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size >= 1 ? Math.min(size, 1024) : 4;
}

/**
 * Half the thread pool, at most the cores (two hashes at a time on the default pool of 4): the other
 * half stays free for compression and the crypto of authenticated requests. 8 waiting per slot is
 * about half a second of scrypt at ~60 ms a hash; a client told 503 retries after a second. One
 * address may hold as many places as there are slots: a flood from it leaves the queue to others.
 */
const concurrency = Math.max(1, Math.min(Math.floor(threadPoolSize() / 2), availableParallelism()));

/** The one gate of the process: every app built in it shares the same thread pool. */
export const secretHashing = new HashingGate({
  concurrency,
  maxWaiting: 8 * concurrency,
  perCaller: concurrency,
});
