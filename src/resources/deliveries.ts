import { dateTime, decimal, flag, integer, items, text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';

const coordinate = (description: string) => decimal({ precision: 10, scale: 7, description });
const quantity = (description: string, required = false) =>
  decimal({ precision: 18, scale: 2, required, description });
const percent = (description: string, required = false) =>
  decimal({ precision: 5, scale: 2, min: 0, max: 100, required, description });
/** Longest reason a rejection may give (extensions.md 13), in characters. */
export const MAX_REJECTION_REASON = 500;
/** Most item lines a delivery may carry (docs/decisions/0014-delivery-items.md). */
export const MAX_DELIVERY_ITEMS = 1000;

/** The delivery item of backoffice-api.md 2.3. */
const deliveryItem = {
  item_number: integer({
    min: 1,
    max: 2_147_483_647,
    required: true,
    description: 'order of the product within the delivery',
  }),
  product_code: text({ max: 20, required: true, description: 'product code' }),
  product_quantity: quantity('quantity to deliver', true),
  product_tax: percent('tax percentage', true),
  product_price: quantity('unit value before tax', true),
  charge_values: quantity('charge values for the product'),
  discount1: percent('discount 1, 0 to 100'),
  observations: text({ max: 500, description: 'per-product notes' }),
  factor: quantity('packing unit of the delivery unit', true),
  factor_description: text({ max: 20, description: 'description of the sales factor' }),
};

/**
 * The delivery of backoffice-api.md 2.2 with its items: the field table of
 * POST /api/deliveries/batch-create (extensions.md 3) and the column list of GET /v1/deliveries/pending.
 */
export const deliveries = batchResource({
  name: 'deliveries',
  path: '/api/deliveries/batch-create',
  message: 'Deliveries created successfully',
  summary: 'Create deliveries with their items (existing codes are ignored)',
  table: 'deliveries',
  key: ['code'],
  onExisting: 'ignore',
  fields: {
    code: text({ max: 30, required: true, description: 'unique delivery code' }),
    client_id: text({ max: 18, required: true, description: 'customer code in the ERP' }),
    seller_id: text({
      max: 18,
      required: true,
      description: 'internal code of the carrier as defined in the ERP',
    }),
    status_code: text({
      max: 20,
      required: true,
      description: 'delivery status code, e.g. 2 (delivered), RS_PARCIAL (partial)',
    }),
    status_description: text({ max: 100, description: 'status description' }),
    news_code: text({ max: 20, description: 'associated incident code' }),
    news: text({ max: 200, description: 'incident description' }),
    scheduled_date: dateTime({ required: true, description: 'estimated dispatch date' }),
    scheduled_end_date: dateTime({ description: 'delivery deadline' }),
    reported_at: dateTime({ description: 'reported date of the delivery' }),
    observations: text({ max: 500, description: 'general notes' }),
    latitude: coordinate('reported latitude'),
    longitude: coordinate('reported longitude'),
    cell_info: text({ max: 200, description: 'app version and device IMEI' }),
    transmission_date: dateTime({
      description: "date the delivery was transmitted to the service's servers",
    }),
    management_code: text({ max: 30, description: 'associated management code' }),
    visit_time: integer({
      min: 0,
      max: 2_147_483_647,
      description: 'seconds the agent spent entering the delivery',
    }),
    manifest: text({ max: 50, description: 'cargo manifest' }),
    weight: quantity('weight'),
    volume: quantity('volume'),
    created_at: dateTime({ description: 'creation date; default: now (UTC)' }),
    updated_at: dateTime({ description: 'modification date' }),
    add_route_planner: flag({ description: 'Y/N, whether it is added to the route planner' }),
    planned_duration: integer({
      min: 0,
      max: 2_147_483_647,
      description: 'estimated minutes for the delivery',
    }),
    visit_priority: text({ max: 20, description: 'visit priority (free text)' }),
    seller_observations: text({ max: 500, description: 'notes by the carrier' }),
    rescheduling_cause: text({ max: 100, description: 'rescheduling cause' }),
    rescheduling_observations: text({ max: 500, description: 'rescheduling notes' }),
    address: text({ max: 300, description: 'delivery address' }),
    warehouse: text({ max: 20, description: 'warehouse code' }),
    location: text({ max: 20, description: 'location code' }),
    invoice_seller_id: text({ max: 18, description: 'seller code of the invoice' }),
    voucher: text({
      max: 2048,
      default: '',
      description: 'URL of the proof-of-delivery photo; empty string when none',
    }),
    signature: text({
      max: 2048,
      default: '',
      description: 'URL of the signature photo; empty string when none',
    }),
    items: items({
      fields: deliveryItem,
      key: 'item_number',
      maxItems: MAX_DELIVERY_ITEMS,
      description: 'delivery items',
    }),
  },
  insertDefaults: { created_at: 'now' },
  children: { table: 'delivery_items', parentColumn: 'delivery_code' },
  // Set by POST /v1/deliveries/acknowledge, reject and requeue (extensions.md 4 and 13).
  systemColumns: {
    acknowledged_at: dateTime({
      description: 'when the delivery was acknowledged (POST /v1/deliveries/acknowledge); null while pending',
    }),
    rejected_at: dateTime({
      description:
        'when the ERP last rejected the delivery (POST /v1/deliveries/reject); null unless it is rejected now',
    }),
    rejection_reason: text({
      max: MAX_REJECTION_REASON,
      description: "the ERP's reason for the rejection, as given; null unless the delivery is rejected now",
    }),
  },
});
