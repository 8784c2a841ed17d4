import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listParamRules } from '../../src/read/list-params.js';
import { customerList } from '../../src/resources/customer-list.js';
import { customers } from '../../src/resources/customers.js';
import { deliveries } from '../../src/resources/deliveries.js';
import { listResource } from '../../src/resources/list-resource.js';
import { pendingDeliveryList } from '../../src/resources/pending-delivery-list.js';
import { listPageSql, listPageStatement } from '../../src/sql/list-page.js';

const openapi = { operationId: 'x', summary: 'x', description: 'x', schema: { name: 'X', description: 'x' } };
const declare = (filters: Parameters<typeof listResource>[0]['filters']) =>
  listResource({
    path: '/v1/test',
    source: customers,
    filters,
    sort: { field: 'created_at', default: 'descending' },
    limit: { max: 10, default: 5 },
    counter: 'customers',
    openapi,
  });

describe('list declarations', () => {
  test("the query rules are the contract's tables (backoffice-api.md 4.1, 4.2 and 8)", () => {
    // The 18-character filters are derived from the fields they filter: if a field's maximum ever
    // differs from the contract's 18, this fails, and the declaration must state 18 as maxLength.
    assert.deepEqual(listParamRules(customerList), {
      client_id: { kind: 'text', max: 18 },
      created_from: { kind: 'date' },
      modified_from: { kind: 'date' },
      sort: { kind: 'choice', values: ['created_at', '-created_at'], default: '-created_at' },
      page: { kind: 'integer', min: 1, default: 1 },
      limit: { kind: 'integer', min: 1, max: 1000, default: 100 },
    });
    assert.deepEqual(listParamRules(pendingDeliveryList), {
      client_id: { kind: 'text', max: 18 },
      seller_id: { kind: 'text', max: 18 },
      reported_from: { kind: 'date' },
      sort: { kind: 'choice', values: ['reported_at', '-reported_at'], default: '-reported_at' },
      page: { kind: 'integer', min: 1, default: 1 },
      limit: { kind: 'integer', min: 1, max: 500, default: 100 },
    });
  });

  test("a filter's maximum is its field's unless the declaration states the contract's own", () => {
    assert.deepEqual(listParamRules(declare({ n: { field: 'name', match: 'equals', meaning: '' } })).n, {
      kind: 'text',
      max: 150,
    });
    const stated = declare({ n: { field: 'name', match: 'equals', meaning: '', maxLength: 18 } });
    assert.deepEqual(listParamRules(stated).n, { kind: 'text', max: 18 });
  });

  test('a filter on a field that does not exist, or of a type it cannot filter, fails at start', () => {
    assert.throws(
      () => declare({ x: { field: 'nope', match: 'equals', meaning: '' } }),
      /nope is not a field/,
    );
    assert.throws(
      () => declare({ x: { field: 'quota', match: 'equals', meaning: '' } }),
      /needs a text field/,
    );
    assert.throws(() => declare({ x: { field: 'code', match: 'since', meaning: '' } }), /needs a DateTime/);
    assert.throws(
      () =>
        listResource({
          path: '/v1/test',
          source: deliveries,
          filters: {},
          sort: { field: 'reported_at', default: 'descending' },
          limit: { max: 10, default: 5 },
          counter: 'deliveries',
          openapi,
        }),
      /items schema/,
    );
  });
});

describe('the page statement of a declared list', () => {
  const base = { tenantId: 7, descending: false, page: 1, limit: 10 };

  test('the rows it includes, the filters given in declaration order, the sort with its nulls', () => {
    const statement = listPageStatement(pendingDeliveryList);
    const { sql, params } = listPageSql(statement, {
      ...base,
      filters: { reported_from: '2026-01-01', client_id: 'C1' },
    });
    assert.match(
      sql,
      /WHERE d\.tenant_id = \$1 AND d\.acknowledged_at IS NULL AND d\.rejected_at IS NULL AND d\.client_id = \$2 AND d\.reported_at >= \$3::timestamp\n/,
    );
    assert.match(sql, /ORDER BY d\.reported_at ASC NULLS FIRST, d\.code ASC\n/);
    assert.match(sql, /SELECT json_agg\(it ORDER BY it\.item_number\)/);
    assert.deepEqual(params, [7, 'C1', '2026-01-01', 10]);
  });

  test('descending past the first page: keys paged first, a known total reused at its version', () => {
    const statement = listPageStatement(customerList);
    const { sql, params } = listPageSql(statement, {
      ...base,
      descending: true,
      page: 3,
      filters: { client_id: 'A' },
      known: { version: '4', total: 25 },
    });
    assert.match(
      sql,
      /^WITH keys AS \(\n {2}SELECT c\.code FROM customers c\n {2}WHERE c\.tenant_id = \$1 AND c\.code = \$2\n/,
    );
    assert.match(sql, /ORDER BY c\.created_at DESC, c\.code DESC\n {2}LIMIT \$3 OFFSET \$4\n/);
    assert.match(sql, /name = 'customers'\), -1\) = \$5::bigint THEN \$6::bigint ELSE/);
    assert.deepEqual(params, [7, 'A', 10, 20, '4', 25]);
  });

  test('unfiltered: the total is the kept count, no known total is used', () => {
    const statement = listPageStatement(customerList);
    const { sql, params } = listPageSql(statement, {
      ...base,
      filters: {},
      known: { version: '1', total: 3 },
    });
    assert.match(
      sql,
      /COALESCE\(\(SELECT n FROM row_counts WHERE tenant_id = \$1 AND name = 'customers'\), 0\)::int/,
    );
    assert.match(sql, /NULL::text AS version/);
    assert.deepEqual(params, [7, 10]);
  });
});
