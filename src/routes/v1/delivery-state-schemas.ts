import Type, { type TSchema } from 'typebox';
import { ACKNOWLEDGE_BODY_LIMIT } from '../../deliveries/acknowledge.js';
import { MAX_REJECTIONS, REJECT_BODY_LIMIT } from '../../deliveries/rejections.js';
import { schemaRef } from '../../fields/json-schema.js';
import type { RouteDeclaration } from '../../http/route-schema.js';
import { MAX_BATCH_ITEMS } from '../../resources/batch-resource.js';
import { deliveries } from '../../resources/deliveries.js';

/*
 * The routes that change a delivery's state (extensions.md 4 and 13), each declared once: the route,
 * its body's shape, its document. The body is checked by the batch endpoints' array rules and the
 * elements' field tables (src/deliveries/*), one rule in one place: the shape declared here is what
 * those rules accept, for the document (test/openapi/request-schemas.test.ts holds them together).
 */

const tags = ['Read'];

/** A delivery's code, by the rules of the deliveries' own code field. */
const deliveryCode = Type.Unsafe<string>(
  deliveries.fields.code!.valueSchema({
    direction: 'request',
    childSchema: () => {
      throw new Error('a delivery code has no child objects');
    },
  }),
);

/** One rejection, by REJECTION_ITEM's field table (the document's `Rejection`). */
const rejection = Type.Unsafe<{ code: string; reason: string }>(schemaRef('Rejection'));

const arrayBody = (items: TSchema, maxItems: number) => Type.Array(items, { minItems: 1, maxItems });

const bodyRules = (maxItems: number, bodyLimit: number) =>
  ` Body: a JSON array of 1 to ${maxItems} elements, at most ${bodyLimit} bytes (x-body-limit), with ` +
  'the array rules of the batch endpoints.';

export const deliveryStateRoutes = {
  acknowledge: {
    method: 'POST',
    url: '/v1/deliveries/acknowledge',
    bodyLimit: ACKNOWLEDGE_BODY_LIMIT,
    schema: {
      operationId: 'acknowledgeDeliveries',
      tags,
      summary: 'Acknowledge downloaded deliveries',
      description:
        'Marks deliveries as received by the ERP: they never appear in the pending list again, and a ' +
        'rejected one is no longer rejected. Idempotent; codes the tenant does not have are listed in notFound.' +
        bodyRules(MAX_BATCH_ITEMS, ACKNOWLEDGE_BODY_LIMIT),
      body: arrayBody(deliveryCode, MAX_BATCH_ITEMS),
    },
  },
  reject: {
    method: 'POST',
    url: '/v1/deliveries/reject',
    bodyLimit: REJECT_BODY_LIMIT,
    schema: {
      operationId: 'rejectDeliveries',
      tags,
      summary: 'Reject deliveries the ERP cannot take, with a reason',
      description:
        'The deliveries leave the pending list and appear in GET /v1/deliveries/rejected with rejected_at and ' +
        'rejection_reason, until they are requeued or acknowledged. Rejecting again replaces the reason (and ' +
        'the date); a code given twice takes its last reason. Codes that name no pending or rejected delivery ' +
        'of the tenant (acknowledged ones included) are listed in notFound.' +
        bodyRules(MAX_REJECTIONS, REJECT_BODY_LIMIT),
      body: arrayBody(rejection, MAX_REJECTIONS),
    },
  },
  requeue: {
    method: 'POST',
    url: '/v1/deliveries/requeue',
    bodyLimit: ACKNOWLEDGE_BODY_LIMIT,
    schema: {
      operationId: 'requeueDeliveries',
      tags,
      summary: 'Put rejected deliveries back in the pending list',
      description:
        'Once the ERP can take them: rejected_at and rejection_reason become null and the deliveries are ' +
        'pending again. Codes that name no rejected delivery of the tenant are listed in notFound.' +
        bodyRules(MAX_BATCH_ITEMS, ACKNOWLEDGE_BODY_LIMIT),
      body: arrayBody(deliveryCode, MAX_BATCH_ITEMS),
    },
  },
} as const satisfies Record<string, RouteDeclaration>;
