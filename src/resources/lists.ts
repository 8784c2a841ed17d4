import { customerList } from './customer-list.js';
import type { ListResource } from './list-resource.js';
import { pendingDeliveryList } from './pending-delivery-list.js';
import { rejectedDeliveryList } from './rejected-delivery-list.js';

/** Every list endpoint of the service (GET /v1/...), in the order the OpenAPI document shows them. */
export const listResources: readonly ListResource[] = [
  customerList,
  pendingDeliveryList,
  rejectedDeliveryList,
];
