import { deliveries } from './deliveries.js';
import { type ListResourceDefinition, listResource } from './list-resource.js';

/** The filters of both delivery lists (pending and rejected): the same parameters on each. */
export const deliveryListFilters: ListResourceDefinition['filters'] = {
  client_id: { field: 'client_id', match: 'equals', meaning: 'exact customer code' },
  seller_id: { field: 'seller_id', match: 'equals', meaning: 'exact seller (carrier) code' },
  reported_from: {
    field: 'reported_at',
    match: 'since',
    meaning: 'deliveries reported on or after this date',
  },
};

/**
 * GET /v1/deliveries/pending (backoffice-api.md 4.2 and 8; extensions.md 4 and 13): deliveries with
 * their items that were neither acknowledged nor rejected. client_id's and seller_id's 18 characters
 * are their fields' own maximum.
 */
export const pendingDeliveryList = listResource({
  path: '/v1/deliveries/pending',
  source: deliveries,
  only: { unset: ['acknowledged_at', 'rejected_at'] },
  filters: deliveryListFilters,
  // One index serves both directions: a delivery without a reported date is the oldest.
  sort: { field: 'reported_at', default: 'descending', nullsAs: 'oldest' },
  limit: { max: 500, default: 100 },
  counter: 'deliveries_pending',
  openapi: {
    operationId: 'listPendingDeliveries',
    summary: 'List deliveries neither acknowledged nor rejected',
    description:
      'Deliveries with their items that have been neither acknowledged (POST /v1/deliveries/acknowledge) nor ' +
      'rejected (POST /v1/deliveries/reject), sorted ' +
      'by reported date, the code breaking ties; a delivery without a reported date sorts as the oldest.',
    schema: { name: 'Delivery', description: 'A delivery with its items, in item_number order.' },
    itemsSchema: { name: 'DeliveryItem', description: 'One line of a delivery.' },
  },
});
