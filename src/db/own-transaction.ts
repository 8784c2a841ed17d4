import type { Transaction } from './database.js';

/*
 * A request without an Idempotency-Key writes in a transaction of its own, beside its activity row
 * (src/http/keyed-reply.ts). Unlike a keyed request's transaction, which must keep even a refused
 * answer, nothing in it outlives a failed write: the work may then give the transaction up and run
 * again on its own, where its refusal is answered (and recorded after it). So its writes need no
 * savepoint, which costs two round trips and a subtransaction per batch (docs/performance.md,
 * "Activity and overview").
 */

const ownTransactions = new WeakSet<Transaction>();

/** Marks tx as a request's own transaction, which a failed write may abort. */
export function markOwnTransaction(tx: Transaction): Transaction {
  ownTransactions.add(tx);
  return tx;
}

/** tx is a request's own transaction: a write in it may fail and abort it (RunAgainAlone). */
export function isOwnTransaction(tx: Transaction | undefined): boolean {
  return tx !== undefined && ownTransactions.has(tx);
}

/**
 * Thrown by work whose statement failed inside a request's own transaction, where the refusal cannot
 * be answered (the transaction is aborted): the transaction is rolled back and the work runs again
 * without it.
 */
export class RunAgainAlone extends Error {
  constructor(readonly reason: unknown) {
    super('the work runs again outside the aborted transaction');
  }
}
