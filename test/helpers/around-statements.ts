import { type Database, inTransaction, type Queryable, type Transaction } from '../../src/db/database.js';

/*
 * A database whose statements run a step of the test when they are sent: to make a race happen
 * between two statements, or to see which statements a request sent.
 */

export type Step = (text: string, db: Database) => Promise<void>;

/** The database, with `before` and `after` run around each statement sent (transactions included). */
export function around(db: Database, steps: { before?: Step; after?: Step }): Database {
  const wrap = (q: Queryable): Queryable => ({
    query: async (text, params) => {
      await steps.before?.(text, db);
      try {
        return await q.query(text, params);
      } finally {
        await steps.after?.(text, db);
      }
    },
    exec: (script) => q.exec(script),
  });
  return Object.assign(Object.create(db) as Database, {
    ...wrap(db),
    // Its savepoints too are statements of the wrapped transaction.
    transaction: <T>(work: (tx: Transaction) => Promise<T>) =>
      db.transaction((tx) => work(inTransaction(wrap(tx), tx.copyFrom))),
  });
}
