import { randomId } from '../auth/secrets.js';
import type { Database, Queryable, Transaction } from '../db/database.js';
import { encodeCursor } from '../feed/cursor.js';
import {
  deleteOtherStreams,
  type EndpointRow,
  insertEndpoint,
  insertStreams,
  lockTenantEndpoints,
  replayStream,
  retryNow,
  rotateSecret,
  selectEndpoint,
  updateEndpoint,
} from '../sql/webhook-endpoints.js';
import { AddressNotAllowed, type AddressRules, checkDestination, type Resolve } from './addresses.js';
import {
  checkReplay,
  type EndpointChange,
  type EndpointInput,
  type FieldError,
  MAX_ENDPOINTS_PER_TENANT,
} from './endpoint-input.js';
import { sealSecret } from './secret-sealing.js';
import { newWebhookSecret } from './signature.js';

/*
 * What the webhook management endpoints do (extensions.md 11), below HTTP: each answers the shape the
 * spec gives or throws a WebhookRefusal that the route turns into its error answer.
 */

/** A request the endpoints refuse: 400 naming fields, 404, or 409 (the tenant's endpoints are full). */
export class WebhookRefusal extends Error {
  constructor(
    readonly statusCode: 400 | 404 | 409,
    readonly errors: readonly (FieldError | { message: string })[],
  ) {
    super(`webhook request refused (${statusCode})`);
    this.name = 'WebhookRefusal';
  }
}

export const NOT_FOUND_MESSAGE = 'Webhook endpoint not found';
export const notFound = () => new WebhookRefusal(404, [{ message: NOT_FOUND_MESSAGE }]);
export const TOO_MANY_MESSAGE = `A tenant may have at most ${MAX_ENDPOINTS_PER_TENANT} webhook endpoints`;

/** What the endpoints need besides the database. */
export interface EndpointContext {
  rules: AddressRules;
  resolve: Resolve;
  sealingKey(): Promise<Uint8Array>;
  /** The generation of the feed's cursors (src/feed/generation.ts). */
  generation(): Promise<number>;
}

/** An endpoint as the API shows it: positions as change-feed cursors, never its secret. */
export function presentEndpoint(row: EndpointRow): Record<string, unknown> {
  const positions: Record<string, string> = {};
  for (const resource of row.resources) {
    const stream = row.positions.find((p) => p.resource === resource);
    if (!stream) continue;
    positions[resource] = encodeCursor(
      resource,
      { xid: stream.xid, key: stream.key },
      stream.t ?? undefined,
      stream.generation,
    );
  }
  return {
    id: row.id,
    url: row.url,
    resources: row.resources,
    description: row.description,
    batch_size: row.batch_size,
    status: row.status,
    failing_since: row.failing_since,
    disabled_reason: row.disabled_reason,
    positions,
    created_at: row.created_at,
  };
}

/**
 * How long registration waits for the URL's host name to resolve. A resolver that never answers must
 * not hold the request: the 400 names `url` instead. (The lookup itself cannot be cancelled; it ends
 * when the system resolver gives up.)
 */
export const REGISTRATION_LOOKUP_MS = 5_000;

class LookupTimedOut extends Error {}

function withinTime<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LookupTimedOut()), ms);
  });
  return Promise.race([work, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * The URL's host may be reached: every address it stands for is public (or, for http://, inside
 * WEBHOOK_ALLOWED_NETWORKS). The 400 names `url`, and the setting that would allow what it refuses.
 */
export async function checkUrlReachable(url: URL, context: EndpointContext): Promise<void> {
  try {
    const resolve: Resolve = (hostname) => withinTime(context.resolve(hostname), REGISTRATION_LOOKUP_MS);
    await checkDestination(url, context.rules, resolve);
  } catch (error) {
    let message: string;
    if (error instanceof AddressNotAllowed) {
      message =
        url.protocol === 'http:'
          ? 'http:// is allowed only to hosts inside WEBHOOK_ALLOWED_NETWORKS; use https://'
          : 'Host resolves to an address that is not public (loopback, private, link-local, shared, unique-local, multicast or unspecified); the operator allows such networks with WEBHOOK_ALLOWED_NETWORKS';
    } else if (error instanceof LookupTimedOut) {
      message = `Host name did not resolve within ${REGISTRATION_LOOKUP_MS / 1000} seconds`;
    } else {
      // The resolver's own failure (no such name, no answer, a server failure): nothing to deliver to.
      message = 'Host name does not resolve';
    }
    throw new WebhookRefusal(400, [{ field: 'url', message }]);
  }
}

async function inTransaction<T>(
  q: Database | Transaction,
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  return 'transaction' in q ? q.transaction(work) : work(q);
}

/**
 * What a write needs from outside its transaction, read before it begins: the sealing key and the
 * feed's generation may be loaded from the database on first use, and inside a transaction on PGlite's
 * one connection that load would wait for the transaction itself.
 */
export interface Prepared {
  secret: string;
  sealed: string;
  generation: number;
}

export async function prepareWrite(context: EndpointContext): Promise<Prepared> {
  const secret = newWebhookSecret();
  return {
    secret,
    sealed: sealSecret(await context.sealingKey(), secret),
    generation: await context.generation(),
  };
}

/** POST /v1/webhooks: the endpoint, its secret shown this once. */
export async function createEndpoint(
  q: Database | Transaction,
  tenantId: number,
  input: EndpointInput,
  { secret, sealed, generation }: Prepared,
): Promise<Record<string, unknown>> {
  const row = await inTransaction(q, async (tx) => {
    if ((await lockTenantEndpoints(tx, tenantId)) >= MAX_ENDPOINTS_PER_TENANT) {
      throw new WebhookRefusal(409, [{ message: TOO_MANY_MESSAGE }]);
    }
    const id = randomId('wh_', 12);
    await insertEndpoint(tx, {
      id,
      tenantId,
      url: input.url.href,
      resources: input.resources,
      description: input.description,
      batchSize: input.batchSize,
      sealedSecret: sealed,
    });
    await insertStreams(tx, id, tenantId, input.resources, input.from === 'start', generation);
    return (await selectEndpoint(tx, tenantId, id))!;
  });
  const { positions, created_at, ...shown } = presentEndpoint(row);
  return { ...shown, secret, positions, created_at };
}

/** PATCH /v1/webhooks/{id}: a resource added starts at the feed's frontier now. */
export async function changeEndpoint(
  db: Database,
  tenantId: number,
  id: string,
  change: EndpointChange,
  context: EndpointContext,
): Promise<Record<string, unknown>> {
  const generation = await context.generation();
  const row = await db.transaction(async (tx) => {
    const found = await updateEndpoint(tx, tenantId, id, {
      ...(change.url ? { url: change.url.href } : {}),
      ...(change.resources ? { resources: change.resources } : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
      ...(change.batchSize !== undefined ? { batchSize: change.batchSize } : {}),
      ...(change.status ? { status: change.status } : {}),
    });
    if (!found) throw notFound();
    if (change.resources) {
      await deleteOtherStreams(tx, id, tenantId, change.resources);
      await insertStreams(tx, id, tenantId, change.resources, false, generation);
    }
    return (await selectEndpoint(tx, tenantId, id))!;
  });
  return presentEndpoint(row);
}

export async function rotateEndpointSecret(
  q: Queryable,
  tenantId: number,
  id: string,
  { secret, sealed }: Prepared,
): Promise<{ secret: string }> {
  if (!(await rotateSecret(q, tenantId, id, sealed))) throw notFound();
  return { secret };
}

/** POST /v1/webhooks/{id}/replay: delivery of the resource goes on after the cursor (or the start). */
export async function replayEndpoint(
  q: Queryable,
  tenantId: number,
  id: string,
  body: unknown,
  { generation }: Pick<Prepared, 'generation'>,
): Promise<void> {
  const endpoint = await selectEndpoint(q, tenantId, id);
  if (!endpoint) throw notFound();
  const checked = checkReplay(body, endpoint.resources, generation);
  if (!checked.ok) throw new WebhookRefusal(400, checked.errors);
  if (!(await replayStream(q, tenantId, id, { ...checked.value, generation }))) throw notFound();
}

/**
 * POST /v1/webhooks/{id}/retry: the delivery under way of each resource is due now rather than at its
 * scheduled time, a disabled endpoint active first (docs/decisions/0137-webhook-retry-now.md). With
 * nothing waiting it changes nothing, and answers all the same.
 */
export async function retryEndpoint(q: Queryable, tenantId: number, id: string): Promise<void> {
  if (!(await retryNow(q, tenantId, id))) throw notFound();
}
