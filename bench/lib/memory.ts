import { customers } from '../../src/resources/customers.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { generateCustomers, generateDeliveries } from '../../src/seed/generate.js';
import { encode, expect201, post, type Sides } from './batch-bench.js';
import { memoryOf, resetPeak } from './server.js';

/**
 * The server's memory from /proc/<pid>/status: resident set (VmRSS) when idle, and the peak resident
 * set (VmHWM) during one 10,000-item batch, the peak first reset to the current RSS (clear_refs), so
 * the figure belongs to that batch alone.
 */

export interface BatchMemory {
  label: string;
  /** RSS just before the batch, kB. */
  beforeKb: number;
  /** Peak RSS while the batch ran, kB. */
  peakKb: number;
  /** Request body, bytes. */
  bodyBytes: number;
  /** False when the peak could not be reset: then it is the peak since the server started. */
  resetWorked: boolean;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** RSS after a pause (timers, lazy compilation and the GC settle). */
export async function idleRss(pid: number, pauseMs = 1_500): Promise<number> {
  await sleep(pauseMs);
  return memoryOf(pid).rssKb;
}

/** Peak RSS of the server during a 10,000-customer batch and a 10,000-delivery batch with 5 items each. */
export async function batchMemory(sides: Sides): Promise<BatchMemory[]> {
  const pid = sides.server.pid;
  const batches = [
    {
      label: '10,000 customers',
      path: customers.path,
      body: encode(generateCustomers({ from: 0, count: 10_000, seed: 99 })),
    },
    {
      label: '10,000 deliveries x 5 items',
      path: deliveries.path,
      body: encode(
        generateDeliveries({ from: 0, count: 10_000, seed: 99, itemsPerDelivery: 5, customers: 10_000 }),
      ),
    },
  ];
  const figures: BatchMemory[] = [];
  for (const batch of batches) {
    await sleep(500);
    const resetWorked = resetPeak(pid);
    const beforeKb = memoryOf(pid).rssKb;
    expect201(`memory ${batch.label}`, await post(sides, batch.path, batch.body));
    figures.push({
      label: batch.label,
      beforeKb,
      peakKb: memoryOf(pid).peakKb,
      bodyBytes: batch.body.byteLength,
      resetWorked,
    });
  }
  return figures;
}
