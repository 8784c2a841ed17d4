import { decimal, text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';
import { productCodeField } from './products.js';

/** backoffice-api.md 4.4. */
export const stocks = batchResource({
  name: 'stocks',
  path: '/api/stocks/batch-create',
  message: 'Stocks created successfully',
  summary: 'Create stock records (existing product + location are ignored)',
  table: 'stocks',
  key: ['product_code', 'location'],
  onExisting: 'ignore',
  fields: {
    product_code: productCodeField,
    location: text({ max: 20, required: true, description: 'warehouse, point of sale or location' }),
    quantity: decimal({
      precision: 18,
      scale: 2,
      description: 'available quantity; number or numeric string',
    }),
    factor_description: text({ max: 20, description: 'description of the unit' }),
  },
  setOnInsert: { available: 'Y' },
});
