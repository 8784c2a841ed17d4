import { choice, dateTime, decimal, flag, integer, text, timeOfDay } from '../fields/field.js';
import { batchResource } from './batch-resource.js';

/** Coordinates: 3 integer digits, 7 decimals (about 1 cm). */
const coordinate = (description: string) => decimal({ precision: 10, scale: 7, description });
const money = (description: string, required = false) =>
  decimal({ precision: 18, scale: 2, required, description });
const percent = (description: string) => decimal({ precision: 5, scale: 2, min: 0, max: 100, description });
/** Codes of customers and users are 18 characters everywhere they are referred to (routes, filters). */
const userCode = (description: string) => text({ max: 18, description });

/**
 * The customer of backoffice-api.md 2.1: the field table of POST /api/customers/batch-create
 * (extensions.md 3) and the column list of GET /v1/customers. Lengths:
 * docs/decisions/0013-customer-and-delivery-field-sizes.md.
 */
export const customers = batchResource({
  name: 'customers',
  path: '/api/customers/batch-create',
  message: 'Customers created successfully',
  summary: 'Create or update customers (existing codes are updated)',
  table: 'customers',
  key: ['code'],
  onExisting: 'update',
  fields: {
    code: text({ max: 18, required: true, description: 'unique customer code' }),
    type: text({
      max: 30,
      required: true,
      description: 'customer type or classification defined in the ERP',
    }),
    name: text({ max: 150, required: true, description: 'full name or company name' }),
    contact: text({ max: 100, required: true, description: 'contact person name' }),
    phone: text({ max: 30, required: true, description: 'contact phone' }),
    email: text({ max: 100, description: 'primary e-mail' }),
    email2: text({ max: 100, description: 'secondary e-mail' }),
    address: text({ max: 300, required: true, description: 'physical address' }),
    city: text({ max: 50, required: true, description: 'city' }),
    country: text({ max: 50, description: 'country' }),
    region: text({ max: 50, description: 'region or department' }),
    quota: money('credit capacity', true),
    term: integer({ min: 0, max: 32_767, required: true, description: 'payment term in days' }),
    payment_method: text({ max: 10, required: true, description: 'payment method code' }),
    price_list: text({ max: 20, description: 'price list code assigned from the ERP' }),
    location: text({ max: 20, description: 'warehouse code assigned for sales' }),
    nit: text({ max: 20, description: 'tax id' }),
    discount: percent('discount percentage'),
    discount_list: text({ max: 20, description: 'discount list code' }),
    observations: text({ max: 500, description: 'notes' }),
    name_est: text({ max: 150, description: 'establishment name' }),
    short_name: text({ max: 50, description: 'short name or alias' }),
    operation_center: text({ max: 10, description: 'operation center' }),
    block_sales: flag({ description: 'Y/N, block sales to the customer' }),
    commercial_discount: percent('discount applied automatically when an order is taken'),
    discount_base: money('discount base'),
    withholding_base: money('withholding base'),
    withholding: money('withholding value'),
    corporate_client: text({ max: 20, description: 'tax id of the corporate customer (receivables)' }),
    real_quota: money('real available credit'),
    state: flag({ required: true, description: 'Y (active) or N (inactive)' }),
    parent_client: userCode('code of the parent customer (marks a branch of a main account)'),
    latitude: coordinate('latitude'),
    longitude: coordinate('longitude'),
    visit_priority: choice(['high', 'low', 'regular'], { description: 'one of high, low, regular' }),
    time_window_start: timeOfDay({ description: 'service window start, HH:MM' }),
    time_window_end: timeOfDay({ description: 'service window end, HH:MM' }),
    service_duration_minutes: integer({ min: 0, max: 1440, description: 'average service time in minutes' }),
    seller_can_edit: flag({ description: 'Y/N, seller may edit customer data' }),
    seller_can_inactivate: flag({ description: 'Y/N, seller may inactivate the customer' }),
    tax_exempt: flag({ description: 'Y/N' }),
    apply_associated_scales: flag({ description: 'Y/N, apply only associated discount and bonus scales' }),
    apply_associated_surveys: flag({ description: 'Y/N, allow only associated forms to be filled' }),
    transmitted: flag({ description: 'Y/N, whether the customer was downloaded to the interface' }),
    created_at: dateTime({ description: 'creation timestamp; default: now (UTC)' }),
    created_user_code: userCode('code of the creating user'),
    updated_at: dateTime({
      description: 'last modification timestamp; set to now (UTC) on update unless given',
    }),
    updated_user_code: userCode('code of the last modifying user'),
    inactivation_at: dateTime({ description: 'inactivation timestamp' }),
    georeferenced_at: dateTime({ description: 'georeferencing timestamp' }),
    georeferenced_source: choice(['Android', 'Excel_web', 'LUPAP', 'P_RUTAS', 'SOPORTE', 'Web'], {
      description: 'one of Android, Excel_web, LUPAP, P_RUTAS, SOPORTE, Web',
    }),
    georeferenced_user_code: userCode('code of the user who georeferenced'),
    creation_source: integer({ min: 1, max: 3, description: '1 (WEB), 2 (MOVIL), 3 (INTERFAZ)' }),
    is_prospect: flag({ description: 'Y/N' }),
    prospect_code: userCode('code the customer had as a prospect'),
    approval_state: integer({
      min: 1,
      max: 5,
      description:
        'prospect approval: 1 in follow-up, 2 pending approval, 3 approved, 4 rejected from web, 5 inactivated from mobile',
    }),
    approver_user_code: userCode('user who approved the prospect'),
    rejection_reason: text({ max: 100, description: 'prospect rejection cause' }),
    rejection_observations: text({ max: 500, description: 'prospect rejection notes' }),
    reactivation_at: dateTime({ description: 'prospect reactivation timestamp' }),
    reactivation_user_code: userCode('user who reactivated the prospect'),
    reactivation_reason: text({ max: 100, description: 'reactivation cause' }),
    reactivation_observations: text({ max: 500, description: 'reactivation notes' }),
  },
  insertDefaults: { created_at: 'now' },
  // The creation date is kept on update; the modification date is now unless the ERP gives it.
  setOnUpdate: { created_at: 'kept', updated_at: 'given-or-now' },
});
