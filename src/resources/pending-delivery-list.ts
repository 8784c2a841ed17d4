import { deliveries } from './deliveries.js';
import { listResource } from './list-resource.js';

/**
 * GET /v1/deliveries/pending (backoffice-api.md 4.2 and 8; extensions.md 4): deliveries with their
 * items that were not acknowledged yet. client_id's and seller_id's 18 characters are their fields'
 * own maximum.
 */
export const pendingDeliveryList = listResource({
  path: '/v1/deliveries/pending',
  source: deliveries,
  only: { unset: 'acknowledged_at' },
  filters: {
    client_id: { field: 'client_id', match: 'equals', meaning: 'exact customer code' },
    seller_id: { field: 'seller_id', match: 'equals', meaning: 'exact seller (carrier) code' },
    reported_from: {
      field: 'reported_at',
      match: 'since',
      meaning: 'deliveries reported on or after this date',
    },
  },
  // One index serves both directions: a delivery without a reported date is the oldest.
  sort: { field: 'reported_at', default: 'descending', nullsAs: 'oldest' },
  limit: { max: 500, default: 100 },
  counter: 'deliveries_pending',
  openapi: {
    operationId: 'listPendingDeliveries',
    summary: 'List deliveries not yet acknowledged',
    description:
      'Deliveries with their items that have not been acknowledged (POST /v1/deliveries/acknowledge), sorted ' +
      'by reported date, the code breaking ties; a delivery without a reported date sorts as the oldest.',
    schema: { name: 'Delivery', description: 'A delivery with its items, in item_number order.' },
    itemsSchema: { name: 'DeliveryItem', description: 'One line of a delivery.' },
  },
});
