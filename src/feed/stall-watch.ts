import type { Queryable } from '../db/database.js';
import { feedResources } from '../resources/feed.js';
import { type FeedStall, heldBackChanges, oldestXidHolder } from '../sql/feed-holders.js';

/** The tables of the feed's resources. */
const FEED_TABLES = feedResources.map((feed) => feed.source.table);

/** How often a running server looks (a background work of every instance: src/app.ts). */
export const FEED_WATCH_EVERY_MS = 5_000;

interface WarnLog {
  warn(details: object, message: string): void;
}

const NOTHING: FeedStall = { holder: undefined, heldBack: 0, heldBackSeconds: 0 };

/**
 * Watches what holds the change feed back (src/sql/feed-holders.ts): any transaction that keeps an
 * xid, in any database of the server, delays every tenant's feed (and what is built on it) for as
 * long as it stays open, while writes are answered at once and /ready stays 200. The latest figures
 * feed the metrics; a holder older than warnAfterSeconds gets one warning in the log, with the pid,
 * database and state PostgreSQL reports, never its query text. On PGlite (one connection) nothing
 * else can hold an xid: the figures stay 0.
 */
export class FeedStallWatch {
  readonly #db: Queryable;
  readonly #log: WarnLog;
  readonly #warnAfterSeconds: number;
  #latest: FeedStall = NOTHING;
  /** The holder last warned of (pid and start): one warning per holder. */
  #warned: string | undefined;

  constructor(db: Queryable, log: WarnLog, warnAfterSeconds: number) {
    this.#db = db;
    this.#log = log;
    this.#warnAfterSeconds = warnAfterSeconds;
  }

  get latest(): FeedStall {
    return this.#latest;
  }

  /** Looks once: the figures, and the warning when due. A round of the background work; tests call it. */
  async check(): Promise<FeedStall> {
    const holder = await oldestXidHolder(this.#db);
    const heldBack = holder ? await heldBackChanges(this.#db, FEED_TABLES) : 0;
    this.#latest = { holder, heldBack, heldBackSeconds: holder && heldBack > 0 ? holder.ageSeconds : 0 };
    if (holder && holder.ageSeconds >= this.#warnAfterSeconds) {
      const identity = `${holder.pid}@${holder.startedAt}`;
      if (identity !== this.#warned) {
        this.#warned = identity;
        this.#log.warn(
          { feedHolder: { ...holder, ageSeconds: Math.round(holder.ageSeconds) }, heldBackChanges: heldBack },
          `the change feed is held back: a transaction open for ${Math.round(holder.ageSeconds)} s holds an ` +
            `xid (pid ${holder.pid ?? 'none, prepared'}, database ${holder.database}, state ${holder.state}); ` +
            `changes committed after it reach no tenant's feed until it ends (README, "Change feed held back")`,
        );
      }
    }
    return this.#latest;
  }
}
