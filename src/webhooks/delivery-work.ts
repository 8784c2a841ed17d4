import type { BackgroundWork } from '../background/background-work.js';
import { claimPool } from '../background/claim-pool.js';
import {
  type KeptLease,
  keepLease,
  renewEveryMs,
  TAKEOVER_LEASE_SECONDS,
} from '../background/lease-timing.js';
import type { Queryable } from '../db/database.js';
import { encodeCursor } from '../feed/cursor.js';
import { readFeedPage } from '../feed/page-reader.js';
import { type FeedResource, feedResourceNamed } from '../resources/feed.js';
import {
  beginDelivery,
  type ClaimedStream,
  claimStreams,
  disableEndpoint,
  recordDelivered,
  recordFailed,
  releaseAllStreams,
  releaseStream,
  renewDelivery,
} from '../sql/webhook-streams.js';
import { recordInterrupted, renewStream } from '../sql/webhook-takeover.js';
import { disableIfWentBack } from '../sql/webhook-went-back.js';
import type { AddressRules, Resolve } from './addresses.js';
import { type AttemptResult, attemptDelivery } from './attempt.js';
import { DeliveredPositions } from './delivered-positions.js';
import { DISABLE_AFTER_MS, retryDelaySeconds } from './retry-schedule.js';
import { openSecret } from './secret-sealing.js';
import { deliveryHeaders, newMessageId } from './signature.js';

/*
 * Webhook deliveries (extensions.md 11), a background work of every instance. Each round claims the
 * streams (an endpoint and one of its resources) that have something to send and that no live
 * instance holds (a lease in the stream's row, migration 016), and starts a turn for each; the round
 * does not wait for them, so a slow endpoint never holds up the claiming of others. A turn sends its
 * stream's deliveries one at a time, in feed order, while they are taken, then lets the stream go; a
 * failed attempt lets it go until its next attempt is due. No transaction is open during an attempt:
 * every statement around it is short and stands alone (so PgBouncer's transaction mode serves it).
 */

export interface DeliverySettings {
  rules: AddressRules;
  resolve: Resolve;
  /** The whole attempt: 15 s (extensions.md 11). */
  timeoutMs: number;
  /** How long a claimed stream is held without renewal: how soon another instance replaces a dead one. */
  leaseSeconds: number;
  /** How often a turn renews its stream's lease (default: a third of the lease; tests set their own). */
  renewEveryMs?: number;
  /** Turns at once in this instance, and of them, of one tenant: a tenant's slow endpoints delay only its own. */
  maxTurns: number;
  maxTurnsPerTenant: number;
  /** Between rounds. */
  everyMs: number;
  /**
   * A turn that keeps succeeding lets its stream go after this long (still due): a backlog of one
   * endpoint then waits behind the streams that waited longer, and holds no turn for hours.
   */
  maxTurnMs: number;
  userAgent: string;
  /** Jitter of the retry schedule (tests fix it). */
  random?: () => number;
}

export const DEFAULT_DELIVERY_SETTINGS = {
  timeoutMs: 15_000,
  // Renewed every third of it while a turn runs, an attempt (15 s at most) included: a killed
  // instance's streams are taken over within 10 s (extensions.md 11; src/background/lease-timing.ts,
  // docs/decisions/0141-leases-within-ten-seconds.md).
  leaseSeconds: TAKEOVER_LEASE_SECONDS,
  maxTurnMs: 10_000,
  maxTurns: 64,
  maxTurnsPerTenant: 8,
  everyMs: 250,
} as const;

/** Results of attempts, and endpoints that started failing or were disabled, for the metrics. */
export interface DeliveryCounters {
  attempt(result: AttemptResult, repeat: boolean): void;
  endpointChanged(to: 'failing' | 'disabled'): void;
}

/** Why an endpoint is disabled when its position is not of the feed it reads now. */
export const RESTORED_REASON =
  'The database was restored to an earlier point: replay from a cursor you hold, or from the start';
export const RENUMBERED_REASON = 'The change feed was renumbered after a restore: replay from the start';
/**
 * Why an endpoint is disabled when its stored position went back behind one this instance recorded
 * as delivered (docs/decisions/0146-webhook-position-went-back.md).
 */
export const wentBackReason = (resource: string) =>
  `Deliveries of ${resource} that the database had recorded were lost with it (a failover to a standby that lagged, or a restore to an earlier point), and going on would send them again: replay ${resource} after the last cursor you took (or from the start), then set the endpoint active`;

/** The delivery work, and what tests need of it. */
export interface WebhookDeliveries extends BackgroundWork {
  /** Resolves when every turn started so far has ended (tests: a round, then this). */
  settled(): Promise<void>;
  /** Turns running now. */
  readonly turns: number;
}

export function webhookDeliveries(
  db: Queryable,
  holder: string,
  settings: DeliverySettings,
  sealingKey: () => Promise<Uint8Array>,
  counters?: DeliveryCounters,
  log?: { warn(details: object, message: string): void },
): WebhookDeliveries {
  const random = settings.random ?? Math.random;
  const delivered = new DeliveredPositions();

  /**
   * An endpoint that started failing, or was disabled: told once, by the turn whose statement made it
   * so (docs/decisions/0138-webhook-transitions-told-once.md). Its id, resource and the attempt's error
   * in the deliveries log's words; never its URL (a query string may hold a token) nor a secret.
   */
  function told(stream: ClaimedStream, to: 'failing' | 'disabled', details: object): void {
    counters?.endpointChanged(to);
    log?.warn(
      { webhook: stream.endpoint_id, tenant: stream.tenant_id, resource: stream.resource, ...details },
      to === 'failing' ? 'webhook endpoint started failing' : 'webhook endpoint disabled',
    );
  }

  async function signingSecrets(stream: ClaimedStream): Promise<string[]> {
    const key = await sealingKey();
    const secrets = [openSecret(key, stream.secret)];
    if (stream.previous_secret) secrets.push(openSecret(key, stream.previous_secret));
    return secrets;
  }

  /**
   * Sends the stream's deliveries while they are taken. Returns when there is nothing more to send,
   * an attempt failed (the stream was let go until its retry), or the stream is no longer this
   * instance's to send. True when the turn's last statement let the stream go already (nothing left
   * to release).
   */
  async function turn(claimed: ClaimedStream): Promise<boolean> {
    // The lease is renewed while the turn runs, a long attempt included; a renewal that finds the
    // stream another's aborts the attempt in flight, and the turn records nothing more.
    const lease = keepLease(
      () => renewStream(db, claimed, holder, settings.leaseSeconds),
      settings.renewEveryMs ?? renewEveryMs(settings.leaseSeconds),
    );
    try {
      return await turnHeld(claimed, lease);
    } finally {
      lease.stop();
    }
  }

  /**
   * The stream's stored position is behind one this instance recorded as delivered, with no replay
   * since: the database went back and lost those records' deliveries. Sending on from it would send
   * them again under new webhook-ids; the endpoint is disabled with the reason instead, and its
   * delivered position forgotten, so that setting it active goes on from the stored one (issue #41,
   * docs/decisions/0146-webhook-position-went-back.md).
   */
  async function wentBack(stream: ClaimedStream, feed: FeedResource): Promise<boolean> {
    const position = delivered.mayBeBehind(stream);
    if (!position) return false;
    const reason = wentBackReason(stream.resource);
    const found = await disableIfWentBack(db, feed, stream, position, reason);
    if (found.disabled) {
      delivered.forget(stream);
      told(stream, 'disabled', { reason, storedXid: stream.position_xid, deliveredXid: position.xid });
    }
    return found.behind;
  }

  /** A delivery recorded: the stream's position is `end` now, under the origin the turn claimed. */
  function recorded(stream: ClaimedStream, end: { xid: string; key: string[] }, generation: number): void {
    delivered.remember(stream, { origin: stream.position_origin, generation, xid: end.xid, key: end.key });
  }

  async function turnHeld(claimed: ClaimedStream, lease: KeptLease): Promise<boolean> {
    let stream = claimed;
    const feed = feedResourceNamed(stream.resource);
    if (!feed) return false;
    if (await wentBack(stream, feed)) return false;
    if (stream.interrupted) {
      // Its last holder stopped during an attempt: that attempt is listed, and this one repeats it
      // (docs/decisions/0142-interrupted-attempt-listed.md).
      const failures = await recordInterrupted(db, stream, holder);
      if (failures === undefined) return false;
      stream = { ...stream, failures, interrupted: false };
    }
    const started = performance.now();
    while (!pool.stopped && !lease.lost) {
      const repeat = stream.pending_id !== null;
      // The next delivery, or the range of the one under way read again.
      const read = await readFeedPage(db, {
        tenantId: stream.tenant_id,
        feed,
        generation: stream.generation,
        after: {
          xid: stream.position_xid,
          key: stream.position_key,
          handedOut: stream.position_t ?? undefined,
        },
        limit: repeat ? stream.pending_count! : stream.batch_size,
        upTo: repeat ? { xid: stream.pending_xid!, key: stream.pending_key } : undefined,
      });
      if (read.refused) {
        const reason = read.refused === 'renumbered' ? RENUMBERED_REASON : RESTORED_REASON;
        if (await disableEndpoint(db, stream.endpoint_id, reason)) {
          told(stream, 'disabled', { reason });
        }
        return false;
      }
      const { generation } = read;
      let id: string;
      let end: { xid: string; key: string[]; t: string };
      if (repeat) {
        id = stream.pending_id!;
        end = { xid: stream.pending_xid!, key: stream.pending_key!, t: stream.pending_t! };
        // Still this turn's delivery (not replayed meanwhile), its lease renewed from here; the turn's
        // renewals keep it while the attempt runs.
        if (!(await renewDelivery(db, stream, holder, id, settings.leaseSeconds))) return false;
      } else {
        if (!read.last) return false;
        id = newMessageId();
        end = { ...read.last, t: read.handedOut };
        const held = await beginDelivery(
          db,
          stream,
          holder,
          { id, ...end, count: read.count },
          settings.leaseSeconds,
        );
        if (!held) return false;
      }
      const record = { messageId: id, records: read.count, attempt: stream.failures + 1 };
      if (read.count === 0) {
        // Every record of the range changed again since the first attempt: each arrives later, in
        // its new place. The delivery has nothing left to send.
        const done = { ...record, statusCode: null, error: null, durationMs: 0 };
        const { moved } = await recordDelivered(db, stream, holder, done, {
          leaseSeconds: settings.leaseSeconds,
          generation,
          logged: false,
          release: false,
        });
        if (!moved) return false;
        recorded(stream, end, generation);
      } else {
        const next = encodeCursor(stream.resource, { xid: end.xid, key: end.key }, end.t, generation);
        const body = `{"type":"changes","resource":${JSON.stringify(stream.resource)},"data":${read.data},"next":${JSON.stringify(next)}}`;
        const result = await attemptDelivery({
          url: new URL(stream.url),
          headers: deliveryHeaders({
            secrets: await signingSecrets(stream),
            messageId: id,
            timestampSeconds: Math.floor(Date.now() / 1000),
            body,
            userAgent: settings.userAgent,
          }),
          body,
          timeoutMs: settings.timeoutMs,
          rules: settings.rules,
          resolve: settings.resolve,
          signal: lease.signal,
        });
        // The stream was taken over during the attempt: its new holder lists the attempt and repeats it.
        if (lease.lost) return false;
        counters?.attempt(result, repeat);
        const attempted = {
          ...record,
          statusCode: result.statusCode,
          error: result.error,
          durationMs: Math.round(result.durationMs),
        };
        if (!result.delivered) {
          const after = await recordFailed(db, stream, holder, attempted, {
            retryInSeconds: retryDelaySeconds(stream.failures + 1, random, result.retryAfterSeconds),
            gone: result.statusCode === 410,
            disableAfterSeconds: DISABLE_AFTER_MS / 1000,
          });
          const { error, statusCode } = attempted;
          if (after.started_failing) told(stream, 'failing', { error, statusCode });
          if (after.disabled) told(stream, 'disabled', { reason: after.disabled_reason, error, statusCode });
          return true;
        }
        // Caught up (a first attempt read all there was): the record lets the stream go in the same
        // statement; the next round's claim finds whatever commits later.
        const caughtUp = !repeat && !read.hasMore;
        const now = await recordDelivered(db, stream, holder, attempted, {
          leaseSeconds: settings.leaseSeconds,
          generation,
          logged: true,
          release: caughtUp,
        });
        if (!now.moved) return false;
        recorded(stream, end, generation);
        if (caughtUp) return true;
        if (now.status !== 'active') return false;
        // The endpoint as it is now: a PATCH or a rotation during the turn applies from the next delivery.
        stream = {
          ...stream,
          url: now.url!,
          batch_size: now.batch_size!,
          secret: now.secret!,
          previous_secret: now.previous_secret,
        };
      }
      stream = {
        ...stream,
        position_xid: end.xid,
        position_key: end.key,
        position_t: end.t,
        generation,
        pending_id: null,
        pending_xid: null,
        pending_key: null,
        pending_count: null,
        pending_t: null,
        failures: 0,
      };
      // Long enough: the stream goes back among the due ones (it stays due: it was just delivered).
      if (performance.now() - started >= settings.maxTurnMs) return false;
    }
    return false;
  }

  /** A claimed stream's turn; the stream is let go after it (unless its last statement did). */
  async function run(stream: ClaimedStream): Promise<void> {
    let released = false;
    try {
      released = await turn(stream);
    } finally {
      // Due at once for the next round when it has more.
      if (!released) await releaseStream(db, stream, holder).catch(() => undefined);
    }
  }

  const pool = claimPool<ClaimedStream>({
    max: settings.maxTurns,
    perTenant: settings.maxTurnsPerTenant,
    perClaim: settings.maxTurns,
    claim: (room, busy) => claimStreams(db, holder, room, busy, settings.leaseSeconds),
    tenantOf: (stream) => stream.tenant_id,
    keyOf: (stream) => `${stream.endpoint_id} ${stream.resource}`,
    run,
    failed: (stream, error) =>
      log?.warn(
        { err: error, webhook: stream.endpoint_id },
        'webhook delivery turn failed; it is tried again',
      ),
    letGo: (stream) => releaseStream(db, stream, holder),
  });

  return {
    name: 'webhook-deliveries',
    everyMs: settings.everyMs,
    get turns() {
      return pool.running;
    },
    round: () => pool.fill(),
    settled: () => pool.settled(),
    async close() {
      pool.stop();
      await pool.settled();
      await releaseAllStreams(db, holder);
    },
  };
}
