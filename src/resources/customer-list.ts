import { customers } from './customers.js';
import { listResource } from './list-resource.js';

/**
 * GET /v1/customers (backoffice-api.md 4.1 and 8): the tenant's customers, newest first by default.
 * client_id's 18 characters are the code field's own maximum.
 */
export const customerList = listResource({
  path: '/v1/customers',
  source: customers,
  filters: {
    client_id: { field: 'code', match: 'equals', meaning: 'exact customer code' },
    created_from: { field: 'created_at', match: 'since', meaning: 'customers created on or after this date' },
    modified_from: {
      field: 'updated_at',
      match: 'since',
      meaning: 'customers modified on or after this date',
    },
  },
  sort: { field: 'created_at', default: 'descending' },
  limit: { max: 1000, default: 100 },
  counter: 'customers',
  openapi: {
    operationId: 'listCustomers',
    summary: 'List customers',
    description:
      "The tenant's customers, filtered and paged, sorted by creation date, the code breaking ties in the " +
      'same direction.',
    schema: { name: 'Customer', description: 'A customer, as loaded by POST /api/customers/batch-create.' },
  },
});
