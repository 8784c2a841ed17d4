import { text } from '../fields/field.js';
import { batchResource } from './batch-resource.js';

/** backoffice-api.md 4.8. New users (sellers) start active (VENDEDOR_ESTADO = Y). */
export const users = batchResource({
  name: 'users',
  path: '/api/users/batch-create',
  message: 'Users created successfully',
  summary: 'Create users, i.e. sellers (existing codes are ignored)',
  table: 'users',
  key: ['code'],
  onExisting: 'ignore',
  fields: {
    code: text({ max: 18, required: true, description: 'unique user code' }),
    name: text({ max: 50, required: true, description: 'name' }),
    type: text({ max: 30, required: true, description: 'for example VENDEDOR, SUPERVISOR' }),
    phone: text({ max: 20, required: true, description: 'phone' }),
    address: text({ max: 300, required: true, description: 'address' }),
    email: text({ max: 50, description: 'e-mail' }),
    city: text({ max: 50, description: 'city' }),
    country: text({ max: 50, description: 'country' }),
    region: text({ max: 50, description: 'region' }),
    location: text({ max: 20, description: 'location' }),
    cedula: text({ max: 18, description: 'identification number' }),
    operation_center: text({ max: 10, description: 'operation center' }),
  },
  setOnInsert: { state: 'Y' },
});
