import { decimal, flag, type Reference, text } from '../fields/field.js';
import { fieldMessages } from '../fields/messages.js';
import { batchResource } from './batch-resource.js';

/** The product master that stocks, factors and prices refer to (extensions.md section 3). */
export const products = batchResource({
  name: 'products',
  path: '/api/products/batch-create',
  message: 'Products created successfully',
  summary: 'Create or update products (the product master)',
  table: 'products',
  key: ['code'],
  onExisting: 'update',
  fields: {
    code: text({ max: 20, required: true, description: 'unique product code' }),
    description: text({ max: 100, required: true, description: 'product description' }),
    unit: text({ max: 20, description: 'unit of measure' }),
    tax: decimal({ precision: 5, scale: 2, description: 'tax percentage' }),
    state: flag({ default: 'Y', description: 'Y (active) or N (inactive); default Y' }),
  },
});

/**
 * A product code of the tenant's product master: what stocks, factors and prices declare
 * (references: productReference), with the message the spec's users know for a code that names none.
 */
export const productReference: Reference = {
  resource: () => products,
  field: 'code',
  message: fieldMessages.unknownProduct,
};

/**
 * The product code by which stocks, factors and prices name a product of the master: the first part
 * of each one's key, declared once.
 */
export const productCodeField = text({
  max: 20,
  required: true,
  references: productReference,
  description: 'must exist in the product master',
});
