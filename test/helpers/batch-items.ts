import type { DecimalField, Field, TextField } from '../../src/fields/field.js';
import type { BatchResource } from '../../src/resources/batch-resource.js';
import { batchResources } from '../../src/resources/index.js';
import { listResources } from '../../src/resources/lists.js';

/**
 * Test data, not spec: for each batch endpoint, a valid item whose key is unique to n, derived from
 * the resource's declaration (src/resources/*.ts), so a new resource has its test data with no edit
 * here. A field that names another resource's key (references) gets REFERRED, which tests seed
 * first (products: true); the first key field that refers to nothing varies with n; every other
 * required field, and an items field, takes the example its type gives the OpenAPI document
 * (field.example).
 */
export interface BatchEndpoint {
  readonly name: string;
  readonly path: string;
  /** Its items name REFERRED in the product master: seed it first. */
  readonly products: boolean;
  valid(n: number): Record<string, unknown>;
}

/** The product every valid item that refers to one names. */
export const REFERRED = 'P1';

/**
 * A value of the field unique to n (n from 0 to 10,000): `K<n>` for text (K, not P, so a product's
 * code never meets the seeded P1), n + 1 with the fraction .25 for decimals (a unit no test case uses
 * on its own: 0, 15, 12.5, 0.01, ...), n + 1 for integers.
 */
function uniqueValue(resource: BatchResource, name: string, field: Field, n: number): unknown {
  switch (field.kind) {
    case 'text': {
      const value = `K${n}`;
      if (value.length > (field as TextField).max) break;
      return value;
    }
    case 'decimal': {
      const { scale } = field as DecimalField;
      return Number(`${n + 1}${scale >= 2 ? '.25' : ''}`);
    }
    case 'integer':
      return n + 1;
  }
  throw new Error(`${resource.name}.${name}: no value unique to n for a ${field.kind} key field`);
}

/** The valid item n of a resource (see above). */
export function validItem(resource: BatchResource, n: number): Record<string, unknown> {
  const varying = resource.key.find((name) => !resource.fields[name]!.references);
  const item: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    if (field.references) item[name] = REFERRED;
    else if (name === varying) item[name] = uniqueValue(resource, name, field, n);
    // Child rows (delivery items) are always given: the nesting is what some tests are after.
    else if (field.required || field.kind === 'items') item[name] = field.example(name);
  }
  return item;
}

function endpointOf(resource: BatchResource): BatchEndpoint {
  return {
    name: resource.name,
    path: resource.path,
    products: resource.reference !== undefined,
    valid: (n: number) => validItem(resource, n),
  };
}

/** Every batch endpoint, customers and deliveries (extensions.md 3) included. */
export const EVERY_BATCH_ENDPOINT: readonly BatchEndpoint[] = batchResources.map(endpointOf);

/**
 * Every batch endpoint of master data: the resources without a list (the seven of backoffice-api.md
 * 4); customers and deliveries, listed and with realistic data of their own, are in read-data.ts.
 */
export const BATCH_ENDPOINTS: readonly BatchEndpoint[] = batchResources
  .filter((resource) => !listResources.some((list) => list.source === resource))
  .map(endpointOf);

export function batchEndpoint(name: string): BatchEndpoint {
  const endpoint = BATCH_ENDPOINTS.find((e) => e.name === name);
  if (!endpoint) throw new Error(`no batch endpoint ${name}`);
  return endpoint;
}
