import { deliveries } from './deliveries.js';
import { listResource } from './list-resource.js';
import { deliveryListFilters } from './pending-delivery-list.js';

/**
 * GET /v1/deliveries/rejected (extensions.md 13): deliveries the ERP rejected and that were neither
 * requeued nor acknowledged since, with the same parameters and shape as the pending list plus the
 * rejection's date and reason, newest rejection first.
 */
export const rejectedDeliveryList = listResource({
  path: '/v1/deliveries/rejected',
  source: deliveries,
  only: { unset: ['acknowledged_at'], set: ['rejected_at'] },
  shows: ['rejected_at', 'rejection_reason'],
  filters: deliveryListFilters,
  // Newest rejection first; the pending list's sort (by reported date) is taken too.
  sort: {
    field: 'rejected_at',
    default: 'descending',
    others: [{ field: 'reported_at', nullsAs: 'oldest' }],
  },
  limit: { max: 500, default: 100 },
  counter: 'deliveries_rejected',
  openapi: {
    operationId: 'listRejectedDeliveries',
    summary: 'List deliveries the ERP rejected',
    description:
      'Deliveries rejected with a reason (POST /v1/deliveries/reject) and not requeued (POST ' +
      '/v1/deliveries/requeue) or acknowledged since, newest rejection first, the code breaking ties.',
    schema: {
      name: 'RejectedDelivery',
      description: 'A rejected delivery with its items, in item_number order, and its rejection.',
    },
    itemsSchema: { name: 'DeliveryItem', description: 'One line of a delivery.' },
  },
});
