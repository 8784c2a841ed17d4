import { decimal, text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';
import { productCodeField } from './products.js';

/** backoffice-api.md 4.9: the one spec endpoint that updates existing keys. */
export const prices = batchResource({
  name: 'prices',
  path: '/api/prices/batch-create',
  message: 'Prices created successfully',
  summary: 'Create or update prices (existing product + price list are updated)',
  table: 'prices',
  key: ['product_code', 'price_list'],
  onExisting: 'update',
  fields: {
    product_code: productCodeField,
    price_list: text({ max: 20, required: true, description: 'price list code' }),
    price: decimal({ precision: 18, scale: 2, required: true, description: 'price in the list' }),
    maximum_discount: decimal({ precision: 10, scale: 2, description: 'maximum discount percent, level 1' }),
    maximum_discount2: decimal({ precision: 10, scale: 2, description: 'maximum discount percent, level 2' }),
    maximum_discount3: decimal({ precision: 10, scale: 2, description: 'maximum discount percent, level 3' }),
    base_price: decimal({
      precision: 18,
      scale: 2,
      description: 'base price before discounts and promotions',
    }),
    minimum_price: decimal({ precision: 18, scale: 2, description: 'minimum allowed sale price' }),
    maximum_price: decimal({ precision: 18, scale: 2, description: 'maximum allowed sale price' }),
    charges: decimal({ precision: 18, scale: 2, description: 'additional charges' }),
    factor_description: text({ max: 20, description: 'description of the unit' }),
  },
});
