/**
 * Retry-safe writes (extensions.md 8, 9): what an Idempotency-Key, outcomes=true and dry_run=true
 * cost on a 10,000-item stocks batch of new keys, beside the same batch sent plainly, and what the
 * replay of a keyed batch costs. The production build as a child process, one keep-alive connection
 * (bench/idempotency.ts and bench/run.ts).
 *
 * Every variant writes into the same stocks table, and the statistics upkeep (src/db/table-upkeep.ts:
 * on PGlite a VACUUM (ANALYZE) once a fifth of the table changed) runs inside whichever write crosses
 * its threshold. Which one that is follows from the order of the writes, not from the variant: with
 * the rotation below, PGlite's keyed batch carried it in 6 of 9 rounds and the plain batch in none,
 * which read as a key costing 1.27x. So each sample is taken less the upkeep it carried, as the
 * server counts it (sfa_db_upkeep_seconds_total on GET /metrics, read before and after the request;
 * nothing else runs meanwhile), and the rows say how many samples carried one.
 */
import { randomUUID } from 'node:crypto';
import { stocks } from '../../src/resources/stocks.js';
import { type Backend, encode, loadProducts, prepareSides } from './batch-bench.js';
import { Client } from './load.js';
import { batchRatio, median, ms, ratio } from './stats.js';
import { BATCH_ITEMS, productCode } from './workloads.js';

/** The variants timed in each round, one after the other, each on keys of its own. */
export type Variant = 'plain' | 'keyed' | 'replay' | 'outcomes' | 'dryRun';

export interface IdempotencyResult {
  backend: Backend;
  /** Each request's time less the upkeep it carried, ms. */
  samples: Record<Variant, number[]>;
  /** Each request's time as the client saw it, upkeep included, ms. */
  observed: Record<Variant, number[]>;
  /** How many of each variant's samples carried an upkeep run. */
  upkeepHits: Record<Variant, number>;
}

/** The server's upkeep time so far, seconds (0 before its first run). */
async function upkeepSeconds(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith('sfa_db_upkeep_seconds_total '));
  if (line === undefined) throw new Error(`no sfa_db_upkeep_seconds_total at ${metricsUrl}`);
  return Number(line.split(' ')[1]);
}

const variants = (): Record<Variant, number[]> => ({
  plain: [],
  keyed: [],
  replay: [],
  outcomes: [],
  dryRun: [],
});

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
  const samples = variants();
  const observed = variants();
  const upkeepHits: Record<Variant, number> = { plain: 0, keyed: 0, replay: 0, outcomes: 0, dryRun: 0 };
  const send = async (query: string, body: Uint8Array, key: string | undefined, expect: number) => {
    const headers = {
      'content-type': 'application/json',
      ...sides.tenant.headers,
      ...(key ? { 'idempotency-key': key } : {}),
    };
    const upkeepBefore = await upkeepSeconds(sides.metricsUrl);
    const started = performance.now();
    const answer = await client.request('POST', `${stocks.path}${query}`, headers, body);
    const elapsed = performance.now() - started;
    const upkeepMs = ((await upkeepSeconds(sides.metricsUrl)) - upkeepBefore) * 1000;
    if (answer.status !== expect) {
      throw new Error(`${query} ${key ?? ''}: HTTP ${answer.status} ${answer.body.toString().slice(0, 300)}`);
    }
    return {
      elapsed,
      upkeepMs,
      text: answer.body.toString(),
      replayed: answer.headers['idempotent-replayed'],
    };
  };
  try {
    // Round 0 warms every path up (the worker thread, each statement's plan); it is not counted.
    for (let round = 0; round <= rounds; round++) {
      const keep = (variant: Variant, { elapsed, upkeepMs }: { elapsed: number; upkeepMs: number }) => {
        if (round === 0) return;
        observed[variant].push(elapsed);
        samples[variant].push(elapsed - upkeepMs);
        if (upkeepMs > 0) upkeepHits[variant]++;
      };
      // Bodies are encoded before any clock starts.
      const plain = encode(items(`PLAIN${round}`));
      const keyed = encode(items(`KEYED${round}`));
      const outcomes = encode(items(`OUT${round}`));
      const dry = encode(items(`DRY${round}`));
      const steps: (() => Promise<void>)[] = [
        async () => keep('plain', await send('', plain, undefined, 201)),
        async () => {
          const key = randomUUID();
          const first = await send('', keyed, key, 201);
          keep('keyed', first);
          const again = await send('', keyed, key, 201);
          if (again.text !== first.text || again.replayed !== 'true') throw new Error('the replay differs');
          keep('replay', again);
        },
        async () => keep('outcomes', await send('?outcomes=true', outcomes, undefined, 201)),
        async () => keep('dryRun', await send('?dry_run=true', dry, undefined, 200)),
      ];
      // A different order each round: the table grows by each write, and PGlite's upkeep (an ANALYZE
      // once a fifth of the table changed) lands on whichever write crosses it; rotating spreads it.
      for (let at = 0; at < steps.length; at++) await steps[(at + round) % steps.length]!();
    }
  } finally {
    client.close();
  }
  return { backend, samples, observed, upkeepHits };
}

/**
 * The table's rows: each variant's median (less the upkeep it carried) beside the plain batch's, and
 * the ratio the issue bounds; then, per backend, how many samples carried an upkeep run and the
 * ratios of the times as observed.
 */
export function idempotencyLines(results: readonly IdempotencyResult[]): [string, string, string, string][] {
  const lines: [string, string, string, string][] = [];
  for (const { backend, samples, observed, upkeepHits } of results) {
    // Each ratio is that of the medians, then each round's pair (the two ran back to back, so the
    // machine's drift between rounds cancels): median and range.
    const row = (label: string, values: number[], base: number[], baseLabel: string, bound: string) =>
      lines.push([
        `${label} (${backend})`,
        `${ms(median(values))} ms`,
        `${baseLabel} ${ms(median(base))} ms`,
        `${batchRatio(values, base)} (bound ${bound})`,
      ]);
    row('stocks 10k new keys with Idempotency-Key', samples.keyed, samples.plain, 'without', '1.1x');
    row('replay of that keyed 10k batch', samples.replay, samples.keyed, 'the batch', '0.05x');
    row('stocks 10k new keys, outcomes=true', samples.outcomes, samples.plain, 'without', '1.2x');
    row('stocks 10k new keys, dry_run=true', samples.dryRun, samples.plain, 'real write', '1.0x');
    const hits = `plain ${upkeepHits.plain}, keyed ${upkeepHits.keyed}, outcomes ${upkeepHits.outcomes}`;
    const asSeen = (variant: Variant) => ratio(median(observed[variant]) / median(observed.plain));
    lines.push([
      `  samples carrying the upkeep (${backend})`,
      `${hits} of ${samples.plain.length}`,
      'upkeep included',
      `keyed ${asSeen('keyed')}, outcomes ${asSeen('outcomes')}`,
    ]);
  }
  return lines;
}
