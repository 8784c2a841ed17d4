/**
 * Asks `get` every `everyMs` until it gives a value (not undefined), which it returns; fails naming
 * `what` after timeoutMs.
 */
export async function until<T>(
  what: string,
  get: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${(timeoutMs / 1000).toFixed(1)} s`);
    await new Promise((done) => setTimeout(done, everyMs));
  }
}
