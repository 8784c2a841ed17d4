import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import type { TObject } from 'typebox';
import { batchOptions, batchParamRules } from '../../src/batch/batch-options.js';
import { changesParamRules } from '../../src/feed/params.js';
import { publicSchema } from '../../src/openapi/route-operations.js';
import { listParamRules } from '../../src/read/list-params.js';
import { checkQuery, type ParamRule } from '../../src/read/query-params.js';
import { listResources } from '../../src/resources/lists.js';
import { batchQuery } from '../../src/routes/api/batch-schemas.js';
import { changesRoute } from '../../src/routes/v1/changes-schemas.js';
import { jobRoutes, LIST_QUERY, RESULTS_QUERY } from '../../src/routes/v1/job-schemas.js';
import { listRoute } from '../../src/routes/v1/list-schemas.js';
import { DELIVERIES_QUERY, webhookRoutes } from '../../src/routes/v1/webhook-schemas.js';

/*
 * A query string is checked by its rules (checkQuery) and declared on its route from the same rules
 * (querySchema). The declaration must say what the check does: a value the check takes is one the
 * declared schema takes, and the declared names are the rules' names, in their order.
 */

const ajv = new Ajv2020({ strict: false });
formats.default(ajv);

const declared: { name: string; query: TObject; rules: Readonly<Record<string, ParamRule>> }[] = [
  ...listResources.map((list) => ({
    name: list.path,
    query: listRoute(list).schema.querystring,
    rules: listParamRules(list),
  })),
  { name: 'GET /v1/changes', query: changesRoute.schema.querystring, rules: changesParamRules },
  { name: 'listJobs', query: jobRoutes.list.schema.querystring, rules: LIST_QUERY },
  { name: 'getJobResults', query: jobRoutes.results.schema.querystring, rules: RESULTS_QUERY },
  {
    name: 'listWebhookDeliveries',
    query: webhookRoutes.deliveries.schema.querystring,
    rules: DELIVERIES_QUERY,
  },
];

/** Values around each kind of rule: numbers, dates, names, long and odd text. */
const values = fc.oneof(
  fc.integer({ min: -5, max: 2_000 }).map(String),
  fc.constantFrom('', '0', '01', '1e2', '2024-02-29', '2023-02-29', '2026-13-01', 'name', '-name'),
  fc
    .date({ min: new Date('1999-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 10)),
  fc.string({ maxLength: 40, unit: 'grapheme' }),
  fc.string({ minLength: 1020, maxLength: 1030 }),
);

describe('query strings: the declared schema is what the rules take', () => {
  for (const { name, query, rules } of declared) {
    test(`${name}: the declared parameters are the rules'`, () => {
      assert.deepEqual(Object.keys(query.properties), Object.keys(rules));
    });

    test(`${name}: a value the check takes is one its declaration takes`, () => {
      const validators = Object.fromEntries(
        Object.entries(query.properties).map(([parameter, schema]) => [
          parameter,
          ajv.compile(publicSchema(schema) as object),
        ]),
      );
      fc.assert(
        fc.property(fc.constantFrom(...Object.keys(rules)), values, (parameter, value) => {
          const checked = checkQuery(rules, { [parameter]: value });
          if (!checked.ok) return;
          const given = rules[parameter]!.kind === 'integer' ? Number(value) : value;
          assert.ok(validators[parameter]!(given), `${parameter}=${JSON.stringify(value)}`);
        }),
        { numRuns: 300 },
      );
    });
  }
});

describe('batch options: the declared query string is what batchOptions takes', () => {
  test("the declared parameters are the rules'; other parameters are left to the endpoint", () => {
    assert.deepEqual(Object.keys(batchQuery.properties), Object.keys(batchParamRules));
    assert.equal((batchQuery as { additionalProperties?: unknown }).additionalProperties, true);
    assert.deepEqual(batchOptions({ x: 'anything' }), batchOptions({}));
  });

  test('a value batchOptions takes is exactly one its declaration takes', () => {
    const validators = Object.fromEntries(
      Object.entries(batchQuery.properties).map(([parameter, schema]) => [
        parameter,
        ajv.compile(publicSchema(schema) as object),
      ]),
    );
    const candidates = fc.oneof(
      fc.constantFrom('', 'true', 'false', 'skip', 'reject', 'TRUE', '1', 'yes', ' true'),
      fc.string({ maxLength: 10 }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(batchParamRules)), candidates, (parameter, value) => {
        let taken = true;
        try {
          batchOptions({ [parameter]: value });
        } catch {
          taken = false;
        }
        assert.equal(validators[parameter]!(value), taken, `${parameter}=${JSON.stringify(value)}`);
      }),
      { numRuns: 300 },
    );
  });
});
