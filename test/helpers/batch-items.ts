/**
 * Test data, not spec: for each batch endpoint, a valid item whose key is unique to n. Product codes
 * refer to P1, which tests seed first (products: true).
 */
export interface BatchEndpoint {
  readonly name: string;
  readonly path: string;
  readonly products: boolean;
  valid(n: number): Record<string, unknown>;
}

export const BATCH_ENDPOINTS: readonly BatchEndpoint[] = [
  {
    name: 'stocks',
    path: '/api/stocks/batch-create',
    products: true,
    valid: (n) => ({ product_code: 'P1', location: `L${n}` }),
  },
  {
    name: 'payment-methods',
    path: '/api/payment-methods/batch-create',
    products: false,
    valid: (n) => ({ code: `C${n}`, description: 'Cash' }),
  },
  {
    name: 'factors',
    path: '/api/factors/batch-create',
    products: true,
    // .25: a unit no test case uses on its own (0, 15, 12.5, 0.01, ...), so no case is a repeated key.
    valid: (n) => ({ product_code: 'P1', unit: `${n + 1}.25`, description: 'BOX' }),
  },
  {
    name: 'routes',
    path: '/api/routes/batch-create',
    products: false,
    valid: (n) => ({ client_code: `C${n}`, seller_code: 'S1', day: 1, frequency: 1 }),
  },
  {
    name: 'users',
    path: '/api/users/batch-create',
    products: false,
    valid: (n) => ({ code: `U${n}`, name: 'Ana', type: 'VENDEDOR', phone: '555', address: 'Street 1' }),
  },
  {
    name: 'prices',
    path: '/api/prices/batch-create',
    products: true,
    valid: (n) => ({ product_code: 'P1', price_list: `L${n}`, price: 10 }),
  },
  {
    name: 'products',
    path: '/api/products/batch-create',
    products: false,
    valid: (n) => ({ code: `Q${n}`, description: 'Product' }),
  },
];

export function batchEndpoint(name: string): BatchEndpoint {
  const endpoint = BATCH_ENDPOINTS.find((e) => e.name === name);
  if (!endpoint) throw new Error(`no batch endpoint ${name}`);
  return endpoint;
}
