import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { checkAcknowledgeValue } from '../../src/deliveries/acknowledge.js';
import { checkRejectValue } from '../../src/deliveries/rejections.js';
import { deliveryStateRoutes } from '../../src/routes/v1/delivery-state-schemas.js';

/*
 * The delivery-state bodies are checked by the batch endpoints' array rules and the elements' field
 * tables; their routes declare the array's shape for the document. The two must say the same.
 */

const endpoints = [
  { route: deliveryStateRoutes.acknowledge, check: checkAcknowledgeValue, element: 'DEL-0001' as unknown },
  { route: deliveryStateRoutes.requeue, check: checkAcknowledgeValue, element: 'DEL-0001' as unknown },
  { route: deliveryStateRoutes.reject, check: checkRejectValue, element: { code: 'DEL-0001', reason: 'No' } },
];

describe('delivery-state bodies: the declared shape is what the array rules accept', () => {
  for (const { route, check, element } of endpoints) {
    const { minItems, maxItems } = route.schema.body as unknown as { minItems: number; maxItems: number };
    test(`${route.schema.operationId}: lengths around ${minItems} and ${maxItems}`, () => {
      const lengths = fc.oneof(
        fc.constantFrom(0, 1, 2, maxItems - 1, maxItems, maxItems + 1),
        fc.integer({ min: 0, max: maxItems + 5 }),
      );
      fc.assert(
        fc.property(lengths, (length) => {
          const checked = check(Array.from({ length }, () => element));
          const declaredOk = length >= minItems && length <= maxItems;
          assert.equal(checked.kind !== 'array', declaredOk, `length ${length}`);
        }),
        { numRuns: 60 },
      );
    });

    test(`${route.schema.operationId}: anything but an array breaks an array rule`, () => {
      fc.assert(
        fc.property(
          fc.anything().filter((value) => !Array.isArray(value) && value !== undefined),
          (value) => {
            assert.equal(check(value).kind, 'array');
          },
        ),
        { numRuns: 200 },
      );
    });
  }
});
