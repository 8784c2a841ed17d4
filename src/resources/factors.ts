import { decimal, text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';
import { productCodeField } from './products.js';

/** backoffice-api.md 4.6. */
export const factors = batchResource({
  name: 'factors',
  path: '/api/factors/batch-create',
  message: 'Factors created successfully',
  summary: 'Create conversion factors (existing product + unit are ignored)',
  table: 'factors',
  key: ['product_code', 'unit'],
  onExisting: 'ignore',
  fields: {
    product_code: productCodeField,
    unit: decimal({ precision: 18, scale: 2, required: true, description: 'numeric conversion factor' }),
    description: text({ max: 20, required: true, description: 'unit description' }),
    volume: decimal({ precision: 18, scale: 2, description: 'volume of the presentation' }),
    weight: decimal({ precision: 18, scale: 2, description: 'weight of the presentation' }),
    minimum_sale: decimal({ precision: 18, scale: 2, description: 'minimum sale quantity' }),
  },
  setOnInsert: { state: 'Y' },
});
