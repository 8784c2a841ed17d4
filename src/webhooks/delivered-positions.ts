import { LRUCache } from 'lru-cache';
import type { DeliveredPosition } from '../sql/webhook-went-back.js';

/*
 * What this instance last recorded as delivered, per stream (an endpoint and one resource): the only
 * witness of a delivery that the database no longer holds once it went back (a failover to a standby
 * that lagged, a restore; docs/decisions/0146-webhook-position-went-back.md). A stream's position is
 * stored in its row, which goes back with the database; this memory does not.
 */

/**
 * Streams remembered; past it the least recently delivered is forgotten, and is then not looked at
 * (never wrongly disabled). A tenant has at most 16 endpoints of 9 resources: 144 streams.
 */
export const REMEMBERED_STREAMS = 10_000;

type Stream = { endpoint_id: string; resource: string };

/** A stream as a claim read it: where its row says it stands. */
type Stored = Stream & {
  position_origin: string;
  generation: number;
  position_xid: string;
  position_key: string[] | null;
};

const keyOf = (stream: Stream) => `${stream.endpoint_id} ${stream.resource}`;

export class DeliveredPositions {
  readonly #positions: LRUCache<string, DeliveredPosition>;

  constructor(max = REMEMBERED_STREAMS) {
    this.#positions = new LRUCache({ max });
  }

  /** A delivery recorded: the stream's position moved to `position` in the database. */
  remember(stream: Stream, position: DeliveredPosition): void {
    this.#positions.set(keyOf(stream), position);
  }

  /** Told (the endpoint disabled): setting it active again goes on from the stored position. */
  forget(stream: Stream): void {
    this.#positions.delete(keyOf(stream));
  }

  /**
   * The delivered position the stored one may be behind, for the database to decide (src/sql/
   * webhook-went-back.ts); undefined when it cannot be: nothing remembered, another origin (a replay,
   * the stream made anew) or generation (a renumbered feed, which the page refuses itself), or a
   * stored position at or ahead of it by xid (another instance's deliveries since). Positions within
   * one xid differ by key, whose order is its columns' types' (and collation's): the database's to say.
   */
  mayBeBehind(stream: Stored): DeliveredPosition | undefined {
    const delivered = this.#positions.get(keyOf(stream));
    if (!delivered) return undefined;
    if (delivered.origin !== stream.position_origin || delivered.generation !== stream.generation) {
      return undefined;
    }
    const stored = BigInt(stream.position_xid);
    const xid = BigInt(delivered.xid);
    if (stored !== xid) return stored < xid ? delivered : undefined;
    // The same xid: a null key stands before every key of it.
    if (delivered.key === null) return undefined;
    if (stream.position_key !== null && sameKey(stream.position_key, delivered.key)) return undefined;
    return delivered;
  }
}

function sameKey(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, at) => value === b[at]);
}
