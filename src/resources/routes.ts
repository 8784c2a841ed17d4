import { decimal, integer, text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';

/** backoffice-api.md 4.7. */
export const routes = batchResource({
  name: 'routes',
  path: '/api/routes/batch-create',
  message: 'Routes created successfully',
  summary: 'Create visit routes (existing client + seller + day are ignored)',
  table: 'routes',
  key: ['client_code', 'seller_code', 'day'],
  onExisting: 'ignore',
  fields: {
    client_code: text({ max: 18, required: true, description: 'customer code' }),
    seller_code: text({ max: 18, required: true, description: 'seller code' }),
    day: decimal({
      precision: 1,
      scale: 0,
      min: 1,
      max: 7,
      required: true,
      description: 'weekday, 1 = Monday to 7 = Sunday',
    }),
    frequency: integer({
      min: 1,
      max: 2_147_483_647,
      required: true,
      description: 'visit frequency (1 weekly, 2 biweekly, 4 monthly)',
    }),
    sequence: integer({ min: 0, max: 2_147_483_647, description: 'visit order within the day' }),
  },
});
