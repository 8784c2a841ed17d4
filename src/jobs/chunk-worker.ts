/**
 * Runs in a worker thread (src/jobs/chunk-check-pool.ts): a chunk of a job's file checked
 * (src/jobs/chunk-check.ts), off the event loop that serves every tenant's requests.
 */

import { getPriority, setPriority } from 'node:os';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import type { BatchResource } from '../resources/batch-resource.js';
import { batchResources } from '../resources/index.js';
import { type CheckedChunk, type ChunkTask, checkChunk, memoryOf } from './chunk-check.js';

/**
 * The thread runs at a lower priority than the event loop and PostgreSQL: a job's check takes the CPU
 * they leave, and never slows another tenant's requests (the bar of issue 42: their p99 beside a
 * job). On Linux a priority is a thread's own (setpriority of 0 names the calling thread); elsewhere
 * it would be the whole process's, so it is left as it is there. Lower than the process's own, which
 * an operator may have lowered already (19 is the lowest).
 */
const LOWER_PRIORITY = 10;
if (process.platform === 'linux') {
  try {
    setPriority(Math.min(19, getPriority() + LOWER_PRIORITY));
  } catch {
    // A container that refuses it: the thread runs at the process's priority.
  }
}

const byName = new Map<string, BatchResource>(batchResources.map((resource) => [resource.name, resource]));

/** The chunk checked; its bytes and the result's arrays moved back to the main thread, not copied. */
export default async function checkFileChunk(task: ChunkTask): Promise<CheckedChunk> {
  const resource = byName.get(task.resource);
  if (!resource) throw new Error(`no batch resource ${task.resource}`);
  const checked = await checkChunk(resource, task);
  return move({
    get [transferableSymbol]() {
      return memoryOf(checked);
    },
    get [valueSymbol]() {
      return checked;
    },
  }) as unknown as CheckedChunk;
}
