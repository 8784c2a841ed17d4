import type { Queryable } from '../db/database.js';
import { selectSigning } from '../sql/webhook-endpoints.js';
import { attemptDelivery } from './attempt.js';
import { type EndpointContext, notFound } from './endpoints.js';
import { openSecret } from './secret-sealing.js';
import { deliveryHeaders, newMessageId } from './signature.js';

/** What POST /v1/webhooks/{id}/ping answers: the endpoint's status, or why none came. */
export interface PingResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Sends one signed delivery of type ping now, by the rules of every delivery (addresses, timeout,
 * no redirects, signed by every secret that signs now), whatever the endpoint's status: a ping is how
 * an integrator checks a paused or disabled endpoint before setting it active. Not logged and not
 * repeated: the answer is its only record.
 */
export async function pingEndpoint(
  q: Queryable,
  tenantId: number,
  id: string,
  context: EndpointContext & { timeoutMs: number; userAgent: string },
): Promise<PingResult> {
  const signing = await selectSigning(q, tenantId, id);
  if (!signing) throw notFound();
  const key = await context.sealingKey();
  const secrets = [openSecret(key, signing.secret)];
  if (signing.previous) secrets.push(openSecret(key, signing.previous));
  const body = JSON.stringify({ type: 'ping', webhook: id });
  const result = await attemptDelivery({
    url: new URL(signing.url),
    headers: deliveryHeaders({
      secrets,
      messageId: newMessageId(),
      timestampSeconds: Math.floor(Date.now() / 1000),
      body,
      userAgent: context.userAgent,
    }),
    body,
    timeoutMs: context.timeoutMs,
    rules: context.rules,
    resolve: context.resolve,
  });
  return { statusCode: result.statusCode, error: result.error, durationMs: Math.round(result.durationMs) };
}
