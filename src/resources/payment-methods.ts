import { text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';

/** backoffice-api.md 4.5. Invoices, quotes and returns paid this way start APROBADO (section 2.4). */
export const paymentMethods = batchResource({
  name: 'payment-methods',
  path: '/api/payment-methods/batch-create',
  message: 'Payment methods created successfully',
  summary: 'Create payment methods (existing codes are ignored)',
  table: 'payment_methods',
  key: ['code'],
  onExisting: 'ignore',
  fields: {
    code: text({ max: 10, required: true, description: 'unique payment method code' }),
    description: text({ max: 50, required: true, description: 'description' }),
    type: text({ max: 1, description: 'nature: E = cash, C = credit, and others' }),
  },
  setOnInsert: { invoice_status: 'APROBADO', quote_status: 'APROBADO', return_status: 'APROBADO' },
});
