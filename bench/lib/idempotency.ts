/**
 * Retry-safe writes (extensions.md 8, 9): what an Idempotency-Key, outcomes=true and dry_run=true
 * cost on a 10,000-item stocks batch of new keys, beside the same batch sent plainly, and what the
 * replay of a keyed batch costs. The production build as a child process, one keep-alive connection
 * (bench/idempotency.ts and bench/run.ts).
 */
import { randomUUID } from 'node:crypto';
import { stocks } from '../../src/resources/stocks.js';
import { type Backend, encode, loadProducts, prepareSides } from './batch-bench.js';
import { Client } from './load.js';
import { median, ms, ratio } from './stats.js';
import { BATCH_ITEMS, productCode } from './workloads.js';

/** The variants timed in each round, one after the other, each on keys of its own. */
export type Variant = 'plain' | 'keyed' | 'replay' | 'outcomes' | 'dryRun';

export interface IdempotencyResult {
  backend: Backend;
  samples: Record<Variant, number[]>;
}

/** 10,000 new keys: every product at a location of its own (tag). */
function items(tag: string): Record<string, unknown>[] {
  return Array.from({ length: BATCH_ITEMS }, (_, at) => ({
    product_code: productCode(at),
    location: tag,
    quantity: (at % 1000) / 100,
  }));
}

export async function runIdempotencyBench(backend: Backend, rounds: number): Promise<IdempotencyResult> {
  const sides = await prepareSides(backend);
  await loadProducts(sides);
  const client = new Client(sides.baseUrl, 1);
  const samples: Record<Variant, number[]> = { plain: [], keyed: [], replay: [], outcomes: [], dryRun: [] };
  const send = async (query: string, body: Uint8Array, key: string | undefined, expect: number) => {
    const headers = {
      'content-type': 'application/json',
      ...sides.tenant.headers,
      ...(key ? { 'idempotency-key': key } : {}),
    };
    const started = performance.now();
    const answer = await client.request('POST', `${stocks.path}${query}`, headers, body);
    const elapsed = performance.now() - started;
    if (answer.status !== expect) {
      throw new Error(`${query} ${key ?? ''}: HTTP ${answer.status} ${answer.body.toString().slice(0, 300)}`);
    }
    return { elapsed, text: answer.body.toString(), replayed: answer.headers['idempotent-replayed'] };
  };
  try {
    // Round 0 warms every path up (the worker thread, each statement's plan); it is not counted.
    for (let round = 0; round <= rounds; round++) {
      const keep = (variant: Variant, elapsed: number) => {
        if (round > 0) samples[variant].push(elapsed);
      };
      // Bodies are encoded before any clock starts.
      const plain = encode(items(`PLAIN${round}`));
      const keyed = encode(items(`KEYED${round}`));
      const outcomes = encode(items(`OUT${round}`));
      const dry = encode(items(`DRY${round}`));
      const steps: (() => Promise<void>)[] = [
        async () => keep('plain', (await send('', plain, undefined, 201)).elapsed),
        async () => {
          const key = randomUUID();
          const first = await send('', keyed, key, 201);
          keep('keyed', first.elapsed);
          const again = await send('', keyed, key, 201);
          if (again.text !== first.text || again.replayed !== 'true') throw new Error('the replay differs');
          keep('replay', again.elapsed);
        },
        async () => keep('outcomes', (await send('?outcomes=true', outcomes, undefined, 201)).elapsed),
        async () => keep('dryRun', (await send('?dry_run=true', dry, undefined, 200)).elapsed),
      ];
      // A different order each round: the table grows by each write, and PGlite's upkeep (an ANALYZE
      // once a fifth of the table changed) lands on whichever write crosses it; rotating spreads it.
      for (let at = 0; at < steps.length; at++) await steps[(at + round) % steps.length]!();
    }
  } finally {
    client.close();
  }
  return { backend, samples };
}

/** The table's rows: each variant's median beside the plain batch's, and the ratio the issue bounds. */
export function idempotencyLines(results: readonly IdempotencyResult[]): [string, string, string, string][] {
  const lines: [string, string, string, string][] = [];
  for (const { backend, samples } of results) {
    const plain = median(samples.plain);
    const keyed = median(samples.keyed);
    const row = (label: string, value: number, base: number, baseLabel: string, bound: string) =>
      lines.push([
        `${label} (${backend})`,
        `${ms(value)} ms`,
        `${baseLabel} ${ms(base)} ms`,
        `${ratio(value / base)} (bound ${bound})`,
      ]);
    row('stocks 10k new keys with Idempotency-Key', keyed, plain, 'without', '1.1x');
    row('replay of that keyed 10k batch', median(samples.replay), keyed, 'the batch', '0.05x');
    row('stocks 10k new keys, outcomes=true', median(samples.outcomes), plain, 'without', '1.2x');
    row('stocks 10k new keys, dry_run=true', median(samples.dryRun), plain, 'real write', '1.0x');
  }
  return lines;
}
