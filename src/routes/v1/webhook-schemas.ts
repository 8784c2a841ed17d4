import { idParams, querySchema, type RouteDeclaration } from '../../http/route-schema.js';
import type { ParamRule } from '../../read/query-params.js';
import { DEFAULT_DELIVERY_SETTINGS } from '../../webhooks/delivery-work.js';
import {
  changeEndpointBody,
  createEndpointBody,
  MAX_ENDPOINTS_PER_TENANT,
  replayEndpointBody,
} from '../../webhooks/endpoint-input.js';
import { DISABLE_AFTER_MS, FIRST_DELAY_SECONDS, MAX_DELAY_SECONDS } from '../../webhooks/retry-schedule.js';

/** The webhook endpoints' routes (extensions.md 11), each declared once: the route, its check, its document. */

export const WEBHOOKS_PATH = '/v1/webhooks';
const ONE = `${WEBHOOKS_PATH}/:id`;
const tags = ['Webhooks'];

/**
 * When a delivery counts as taken and when a failed one is attempted again (extensions.md 11), as the
 * document states it: from the values the delivery work uses.
 */
export const DELIVERY_SCHEDULE = `A 2xx within ${DEFAULT_DELIVERY_SETTINGS.timeoutMs / 1000} s is delivered. Anything else (another status, no answer within ${DEFAULT_DELIVERY_SETTINGS.timeoutMs / 1000} s, a refused connection, a TLS error, a redirect: never followed) is attempted again with the same webhook-id: the first repeat within ${FIRST_DELAY_SECONDS} s, then the wait doubles, with jitter, up to ${MAX_DELAY_SECONDS / 3600} hour between attempts; a Retry-After on 429 or 503 is honoured (up to an hour). 410 disables the endpoint at once, and so do ${DISABLE_AFTER_MS / (24 * 3600 * 1000)} days of failed attempts; POST /v1/webhooks/{id}/retry attempts a waiting delivery now.`;

export const DELIVERIES_QUERY: Readonly<Record<string, ParamRule>> = {
  limit: { kind: 'integer', min: 1, max: 100, default: 20 },
};

export const webhookRoutes = {
  create: {
    method: 'POST',
    url: WEBHOOKS_PATH,
    schema: {
      operationId: 'createWebhook',
      tags,
      summary: 'Register a webhook endpoint',
      description: `The service then POSTs the changes of the chosen resources to the URL, in the change feed's order, signed by the Standard Webhooks scheme with the secret answered here (shown this once). At most ${MAX_ENDPOINTS_PER_TENANT} endpoints per tenant. ${DELIVERY_SCHEDULE}`,
      body: createEndpointBody,
    },
  },
  list: {
    method: 'GET',
    url: WEBHOOKS_PATH,
    schema: {
      operationId: 'listWebhooks',
      tags,
      summary: 'List webhook endpoints',
      description: 'Every endpoint of the tenant, without secrets.',
    },
  },
  get: {
    method: 'GET',
    url: ONE,
    schema: {
      operationId: 'getWebhook',
      tags,
      summary: 'One webhook endpoint',
      description: 'The endpoint, without its secret.',
      params: idParams,
    },
  },
  change: {
    method: 'PATCH',
    url: ONE,
    schema: {
      operationId: 'changeWebhook',
      tags,
      summary: 'Change a webhook endpoint',
      description:
        'Any of url, resources, description, batch_size and status (active or paused). Nothing is lost while paused or disabled. Set active again, a paused or disabled endpoint forgets its failures and resumes with the first change it has not taken.',
      params: idParams,
      body: changeEndpointBody,
    },
  },
  delete: {
    method: 'DELETE',
    url: ONE,
    schema: {
      operationId: 'deleteWebhook',
      tags,
      summary: 'Remove a webhook endpoint',
      description: 'Nothing more is sent to it.',
      params: idParams,
    },
  },
  rotateSecret: {
    method: 'POST',
    url: `${ONE}/rotate-secret`,
    schema: {
      operationId: 'rotateWebhookSecret',
      tags,
      summary: 'Rotate the signing secret',
      description:
        'For the next 24 hours every delivery is signed with both the new and the old secret (two values in webhook-signature).',
      params: idParams,
    },
  },
  replay: {
    method: 'POST',
    url: `${ONE}/replay`,
    schema: {
      operationId: 'replayWebhook',
      tags,
      summary: 'Deliver a resource again from a cursor',
      description:
        'Delivery of the resource goes on after the cursor (absent: from the start of the feed); a delivery under way is dropped.',
      params: idParams,
      body: replayEndpointBody,
    },
  },
  retry: {
    method: 'POST',
    url: `${ONE}/retry`,
    schema: {
      operationId: 'retryWebhook',
      tags,
      summary: 'Attempt the waiting deliveries now',
      description: `The delivery under way of each of the endpoint's resources is attempted within seconds instead of at its next scheduled time; a disabled endpoint becomes active first (a paused one stays paused). With nothing waiting it answers 202 all the same. Its answer is not kept: a repeat retries again. ${DELIVERY_SCHEDULE}`,
      params: idParams,
    },
  },
  ping: {
    method: 'POST',
    url: `${ONE}/ping`,
    schema: {
      operationId: 'pingWebhook',
      tags,
      summary: 'Send a signed ping now',
      description:
        "One delivery of type ping, by the rules of every delivery, whatever the endpoint's status; its answer is not kept.",
      params: idParams,
    },
  },
  deliveries: {
    method: 'GET',
    url: `${ONE}/deliveries`,
    schema: {
      operationId: 'listWebhookDeliveries',
      tags,
      summary: 'The latest delivery attempts',
      description: "Newest first; an endpoint's response body is never kept.",
      params: idParams,
      querystring: querySchema(DELIVERIES_QUERY),
    },
  },
} as const satisfies Record<string, RouteDeclaration>;
