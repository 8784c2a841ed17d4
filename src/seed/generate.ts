import { dateTimeText } from '../fields/date-time.js';
import type { Field, ItemsField } from '../fields/field.js';
import { int, pad, pick, type Random } from '../fields/random.js';
import type { BatchResource } from '../resources/batch-resource.js';
import { customers } from '../resources/customers.js';
import { deliveries } from '../resources/deliveries.js';

/**
 * Realistic, deterministic batch items for customers and deliveries (with items), derived from the
 * field tables: every field of the table gets a value that fits its type, length, precision and range
 * (optional fields are sometimes left out, as an ERP does), and the fields a person would recognise
 * (codes, names, cities, dates, coordinates, references) get plausible values. Item n of a data set
 * depends only on (seed, n), so a data set can be generated in any chunks, in any order.
 */

export { dateTimeText, type Random };

/** A small fast PRNG (mulberry32): uniform in [0, 1). */
export function random(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The generator of item n of a data set: independent of every other item. */
function itemRandom(seed: number, stream: number, n: number): Random {
  return random(Math.imul(seed ^ Math.imul(stream, 0x9e3779b1), 0x85ebca6b) ^ Math.imul(n, 0xc2b2ae35));
}

const FIRST = ['Ana', 'Luis', 'Maria', 'Jorge', 'Carmen', 'Andres', 'Paula', 'Diego', 'Lucia', 'Camilo'];
const LAST = ['Gomez', 'Perez', 'Rodriguez', 'Martinez', 'Lopez', 'Garcia', 'Torres', 'Ramirez', 'Diaz'];
const BUSINESS = ['Tienda', 'Supermercado', 'Drogueria', 'Minimercado', 'Panaderia', 'Distribuidora'];
const SUFFIX = ['La Esquina', 'El Progreso', 'San Jose', 'Central', 'Los Andes', 'Don Pedro', 'La 14'];
const CITIES = [
  ['Bogota', 'Cundinamarca', 4.65, -74.08],
  ['Medellin', 'Antioquia', 6.24, -75.58],
  ['Cali', 'Valle del Cauca', 3.44, -76.52],
  ['Barranquilla', 'Atlantico', 10.96, -74.8],
  ['Bucaramanga', 'Santander', 7.12, -73.12],
  ['Pereira', 'Risaralda', 4.81, -75.69],
] as const;
const STREET = ['Calle', 'Carrera', 'Avenida', 'Diagonal', 'Transversal'];

/** Customers created from this date on, in code order, a few seconds to minutes apart. */
const EPOCH = Date.UTC(2020, 0, 1);
/** Spacing of creation dates: a million customers span about four years. */
const CREATED_STEP_MS = 120_000;
const PRODUCT_CATALOGUE = 5_000;
const SELLERS = 200;

export const customerCode = (n: number) => `C${pad(n + 1, 9)}`;
export const deliveryCode = (n: number) => `D${pad(n + 1, 10)}`;
export const productCode = (n: number) => `P${pad(n + 1, 6)}`;

/** A realistic value for a field, given the item's number and its generator; undefined: use the fallback. */
type Rule = (rng: Random, n: number, context: { total: number; customers: number }) => unknown;

function generator(
  resource: BatchResource | { fields: Readonly<Record<string, Field>> },
  rules: Readonly<Record<string, Rule>>,
  optionalRate: number,
  at: (n: number) => number,
) {
  // Items are not columns: a data set sets them itself (generateDeliveries).
  const entries = Object.entries(resource.fields).filter(([, field]) => field.isColumn);
  for (const name of Object.keys(rules)) {
    if (!Object.hasOwn(resource.fields, name)) throw new Error(`seed rule for unknown field ${name}`);
  }
  return (rng: Random, n: number, context: { total: number; customers: number }) => {
    const item: Record<string, unknown> = {};
    const time = at(n);
    for (const [name, field] of entries) {
      const rule = rules[name];
      if (rule) {
        const value = rule(rng, n, context);
        if (value !== undefined) item[name] = value;
      } else if (field.required || rng() < optionalRate) {
        // The fallback for fields without a realistic rule: any value its type accepts.
        item[name] = field.generate(rng, time);
      }
    }
    return item;
  };
}

const createdAt = (n: number) => EPOCH + n * CREATED_STEP_MS;

const customerRules: Record<string, Rule> = {
  code: (_r, n) => customerCode(n),
  type: (rng) => pick(rng, ['TIENDA', 'SUPERMERCADO', 'MAYORISTA', 'DROGUERIA', 'RESTAURANTE']),
  name: (rng, n) => `${pick(rng, BUSINESS)} ${pick(rng, SUFFIX)} ${n + 1}`,
  name_est: (rng) => `${pick(rng, BUSINESS)} ${pick(rng, SUFFIX)}`,
  short_name: (rng) => pick(rng, SUFFIX),
  contact: (rng) => `${pick(rng, FIRST)} ${pick(rng, LAST)}`,
  phone: (rng) => `3${pad(int(rng, 0, 999_999_999), 9)}`,
  email: (rng, n) => (rng() < 0.8 ? `cliente${n + 1}@example.com` : undefined),
  email2: (rng, n) => (rng() < 0.2 ? `compras${n + 1}@example.com` : undefined),
  address: (rng) => `${pick(rng, STREET)} ${int(rng, 1, 200)} # ${int(rng, 1, 99)}-${int(rng, 1, 99)}`,
  city: (_rng, n) => CITIES[n % CITIES.length]![0],
  region: (_rng, n) => CITIES[n % CITIES.length]![1],
  country: () => 'Colombia',
  quota: (rng) => (int(rng, 0, 5_000) * 10_000).toFixed(2),
  real_quota: (rng) => (int(rng, 0, 5_000) * 10_000).toFixed(2),
  term: (rng) => pick(rng, [0, 15, 30, 45, 60, 90]),
  payment_method: (rng) => pick(rng, ['EF', 'CR30', 'CR60', 'TRANSF']),
  price_list: (rng) => pick(rng, ['GENERAL', 'MAYORISTA', 'ESPECIAL']),
  location: (rng) => pick(rng, ['BOG-01', 'MED-01', 'CAL-01']),
  nit: (rng) => `${int(rng, 800_000_000, 999_999_999)}-${int(rng, 0, 9)}`,
  parent_client: (rng, n) => (n > 10 && rng() < 0.05 ? customerCode(int(rng, 0, n - 1)) : undefined),
  latitude: (rng, n) => (CITIES[n % CITIES.length]![2] + (rng() - 0.5) / 10).toFixed(7),
  longitude: (rng, n) => (CITIES[n % CITIES.length]![3] + (rng() - 0.5) / 10).toFixed(7),
  created_at: (_r, n) => dateTimeText(createdAt(n)),
  updated_at: (rng, n) =>
    rng() < 0.3 ? dateTimeText(createdAt(n) + int(rng, 1, 400) * 86_400_000) : undefined,
  inactivation_at: (rng, n) => (rng() < 0.03 ? dateTimeText(createdAt(n) + 90 * 86_400_000) : undefined),
  reactivation_at: () => undefined,
  rejection_reason: () => undefined,
  rejection_observations: () => undefined,
  reactivation_user_code: () => undefined,
  reactivation_reason: () => undefined,
  reactivation_observations: () => undefined,
  state: (rng) => (rng() < 0.95 ? 'Y' : 'N'),
  is_prospect: (rng) => (rng() < 0.1 ? 'Y' : 'N'),
  created_user_code: (rng) => `V${pad(int(rng, 1, SELLERS), 3)}`,
  updated_user_code: (rng) => `V${pad(int(rng, 1, SELLERS), 3)}`,
  georeferenced_user_code: (rng) => `V${pad(int(rng, 1, SELLERS), 3)}`,
  approver_user_code: () => undefined,
  prospect_code: () => undefined,
};

/** Deliveries reported in code order, about a minute apart; one in ten not reported yet. */
const REPORTED_STEP_MS = 60_000;
const DELIVERY_EPOCH = Date.UTC(2024, 0, 1);
const scheduled = (n: number) => DELIVERY_EPOCH + n * REPORTED_STEP_MS;

const deliveryRules: Record<string, Rule> = {
  code: (_r, n) => deliveryCode(n),
  client_id: (rng, _n, { customers: count }) => customerCode(int(rng, 0, Math.max(count, 1) - 1)),
  seller_id: (rng) => `T${pad(int(rng, 1, SELLERS), 3)}`,
  invoice_seller_id: (rng) => `V${pad(int(rng, 1, SELLERS), 3)}`,
  status_code: (rng) => pick(rng, ['1', '2', 'RS_PARCIAL', 'RS_RECHAZO']),
  status_description: (rng) => pick(rng, ['Pending', 'Delivered', 'Partial delivery', 'Rejected']),
  scheduled_date: (_r, n) => dateTimeText(scheduled(n)),
  scheduled_end_date: (_r, n) => dateTimeText(scheduled(n) + 86_400_000),
  reported_at: (rng, n) =>
    rng() < 0.9 ? dateTimeText(scheduled(n) + int(rng, 600, 36_000) * 1_000) : undefined,
  transmission_date: (_r, n) => dateTimeText(scheduled(n) + 40_000_000),
  created_at: (_r, n) => dateTimeText(scheduled(n) - 86_400_000),
  latitude: (rng, n) => (CITIES[n % CITIES.length]![2] + (rng() - 0.5) / 10).toFixed(7),
  longitude: (rng, n) => (CITIES[n % CITIES.length]![3] + (rng() - 0.5) / 10).toFixed(7),
  cell_info: (rng) => `app 4.${int(rng, 0, 9)}.${int(rng, 0, 20)} IMEI ${pad(int(rng, 0, 999_999_999), 15)}`,
  address: (rng) => `${pick(rng, STREET)} ${int(rng, 1, 200)} # ${int(rng, 1, 99)}-${int(rng, 1, 99)}`,
  warehouse: (rng) => pick(rng, ['BOG-01', 'MED-01', 'CAL-01']),
  voucher: (rng, n) => (rng() < 0.7 ? `https://files.example.com/pod/${deliveryCode(n)}.jpg` : ''),
  signature: (rng, n) => (rng() < 0.7 ? `https://files.example.com/sig/${deliveryCode(n)}.png` : ''),
  rescheduling_cause: () => undefined,
  rescheduling_observations: () => undefined,
};

const itemRules: Record<string, Rule> = {
  // item_number and product_code are set by deliveryItems: they depend on the item's position.
  product_quantity: (rng) => String(int(rng, 1, 120)),
  product_tax: (rng) => pick(rng, ['0', '5', '19']),
  product_price: (rng) => (int(rng, 500, 250_000) + pick(rng, [0, 0.5])).toFixed(2),
  discount1: (rng) => (rng() < 0.3 ? pick(rng, ['2.5', '5', '10']) : undefined),
  charge_values: (rng) => (rng() < 0.1 ? int(rng, 100, 5_000).toFixed(2) : undefined),
  factor: (rng) => pick(rng, ['1', '6', '12', '24']),
  factor_description: (rng) => pick(rng, ['UND', 'CAJA X6', 'CAJA X12', 'PACA X24']),
};

const itemFields = (deliveries.fields.items as ItemsField).fields;
const customerItem = generator(customers, customerRules, 0.6, createdAt);
const deliveryItem = generator(deliveries, deliveryRules, 0.5, scheduled);
const lineItem = generator({ fields: itemFields }, itemRules, 0.5, scheduled);

const STREAM_CUSTOMERS = 1;
const STREAM_DELIVERIES = 2;

export interface Range {
  /** Number of the first item of the range (0-based). */
  from: number;
  count: number;
  /** Seed of the whole data set. */
  seed: number;
}

/** Customers from..from+count-1 of a data set: code C000000001 onwards, created two minutes apart. */
export function generateCustomers(range: Range): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = new Array(range.count);
  const context = { total: range.from + range.count, customers: 0 };
  for (let k = 0; k < range.count; k++) {
    const n = range.from + k;
    out[k] = customerItem(itemRandom(range.seed, STREAM_CUSTOMERS, n), n, context);
  }
  return out;
}

export interface DeliveryRange extends Range {
  /** Item lines per delivery (0 to 1,000). */
  itemsPerDelivery: number;
  /** Customers of the data set: client_id names one of C000000001.. (any code when 0). */
  customers: number;
}

/** Deliveries from..from+count-1 with their item lines, referring to the data set's customers. */
export function generateDeliveries(range: DeliveryRange): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = new Array(range.count);
  const context = { total: range.from + range.count, customers: range.customers };
  for (let k = 0; k < range.count; k++) {
    const n = range.from + k;
    const rng = itemRandom(range.seed, STREAM_DELIVERIES, n);
    const delivery = deliveryItem(rng, n, context);
    const lines: Record<string, unknown>[] = new Array(range.itemsPerDelivery);
    const firstProduct = int(rng, 0, PRODUCT_CATALOGUE - 1);
    for (let line = 0; line < range.itemsPerDelivery; line++) {
      const item = lineItem(rng, n, context);
      item.item_number = line + 1;
      item.product_code = productCode((firstProduct + line * 7) % PRODUCT_CATALOGUE);
      lines[line] = item;
    }
    delivery.items = lines;
    out[k] = delivery;
  }
  return out;
}
