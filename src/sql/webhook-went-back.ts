import type { Queryable } from '../db/database.js';
import type { FeedResource } from '../resources/feed.js';

// A stream whose stored position went back behind one its instance recorded as delivered
// (docs/decisions/0146-webhook-position-went-back.md, src/webhooks/delivered-positions.ts).

/** A position this instance recorded as delivered, under the origin and generation it read. */
export interface DeliveredPosition {
  origin: string;
  generation: number;
  xid: string;
  key: string[] | null;
}

/**
 * The endpoint is disabled with $7 when its stream is still of the origin ($3) and generation ($4)
 * the instance delivered in and its position is behind the delivered one ($5, $6): compared as the
 * feed orders rows, by xid and then by the key's values in their columns' types (a text compare of
 * '10' and '9' would answer otherwise), a null key standing before every key of its xid. Nothing is
 * taken from the turn's claim: a replay or another instance's delivery since then is seen here. The
 * endpoint's row is locked first, then the stream's, as every statement on both takes them
 * (src/sql/webhook-streams.ts); the stream's row is locked so that READ COMMITTED compares its
 * latest version, not the statement's snapshot. Only an active endpoint is disabled: one paused
 * meanwhile is the integrator's, and is looked at again when it is active.
 */
function statement(feed: FeedResource): string {
  const { key, fields } = feed.source;
  const stored = key.map((name, at) => `s.position_key[${at + 1}]::${fields[name]!.sqlType}`);
  const delivered = key.map((name, at) => `($6::text[])[${at + 1}]::${fields[name]!.sqlType}`);
  return `WITH locked AS (
  SELECT id FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE
), behind AS (
  SELECT 1 FROM webhook_streams s
  WHERE s.endpoint_id = $1 AND s.resource = $2 AND EXISTS (SELECT 1 FROM locked)
    AND s.position_origin = $3::uuid AND s.generation = $4
    AND (s.position_xid < $5::xid8 OR (s.position_xid = $5::xid8 AND $6::text[] IS NOT NULL
      AND (s.position_key IS NULL OR (${stored.join(', ')}) < (${delivered.join(', ')}))))
  FOR NO KEY UPDATE OF s
), disabled AS (
  UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $7
  WHERE id = $1 AND status = 'active' AND EXISTS (SELECT 1 FROM behind)
  RETURNING id
)
SELECT EXISTS (SELECT 1 FROM behind) AS behind, EXISTS (SELECT 1 FROM disabled) AS disabled`;
}

/** Built on first use, one per resource: the key's types are the resource's. */
const statements = new Map<string, string>();

export interface WentBack {
  /** The stored position is behind the delivered one, under the same origin: history lost. */
  behind: boolean;
  /** This statement disabled the endpoint (it was active): the caller tells it, once. */
  disabled: boolean;
}

export async function disableIfWentBack(
  q: Queryable,
  feed: FeedResource,
  stream: { endpoint_id: string; resource: string },
  delivered: DeliveredPosition,
  reason: string,
): Promise<WentBack> {
  let text = statements.get(feed.name);
  if (!text) {
    text = statement(feed);
    statements.set(feed.name, text);
  }
  const [row] = await q.query<WentBack>(text, [
    stream.endpoint_id,
    stream.resource,
    delivered.origin,
    delivered.generation,
    delivered.xid,
    delivered.key,
    reason,
  ]);
  return row!;
}
