import type { BatchResource } from './batch-resource.js';
import { customers } from './customers.js';
import { deliveries } from './deliveries.js';
import { factors } from './factors.js';
import { paymentMethods } from './payment-methods.js';
import { prices } from './prices.js';
import { products } from './products.js';
import { routes } from './routes.js';
import { stocks } from './stocks.js';
import { users } from './users.js';

/** Every batch-create endpoint of the service. */
export const batchResources: readonly BatchResource[] = [
  products,
  stocks,
  paymentMethods,
  factors,
  routes,
  users,
  prices,
  customers,
  deliveries,
];
