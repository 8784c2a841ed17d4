import { loadBatch } from '../batch/write-block.js';
import type { Database } from '../db/database.js';
import { customers } from '../resources/customers.js';
import { deliveries } from '../resources/deliveries.js';
import { factors } from '../resources/factors.js';
import { paymentMethods } from '../resources/payment-methods.js';
import { prices } from '../resources/prices.js';
import { products } from '../resources/products.js';
import { routes } from '../resources/routes.js';
import { stocks } from '../resources/stocks.js';
import { users } from '../resources/users.js';

/**
 * A small, plausible data set for a newcomer's first minutes: every list and every reference of the
 * API has something in it. Written through the same pipeline as the batch endpoints.
 */
export async function seedDemoData(db: Database, tenantId: number): Promise<void> {
  const productList = [
    { code: 'CAFE-500', description: 'Ground coffee 500 g', unit: 'UND', tax: '19' },
    { code: 'AZUC-1K', description: 'Sugar 1 kg', unit: 'UND', tax: '5' },
    { code: 'ACEI-1L', description: 'Sunflower oil 1 l', unit: 'UND', tax: '19' },
    { code: 'ARRO-5K', description: 'Rice 5 kg', unit: 'BUL', tax: '0' },
  ];
  await loadBatch(db, tenantId, products, productList);
  await loadBatch(
    db,
    tenantId,
    stocks,
    productList.flatMap((p, n) => [
      {
        product_code: p.code,
        location: 'BOG-01',
        quantity: String(100 + n * 25),
        factor_description: p.unit,
      },
      { product_code: p.code, location: 'MED-01', quantity: String(40 + n * 10), factor_description: p.unit },
    ]),
  );
  await loadBatch(db, tenantId, prices, [
    { product_code: 'CAFE-500', price_list: 'GENERAL', price: '18500.00', maximum_discount: '10' },
    { product_code: 'AZUC-1K', price_list: 'GENERAL', price: '4200.50', maximum_discount: '5' },
    { product_code: 'ACEI-1L', price_list: 'GENERAL', price: '11900', maximum_discount: '8' },
    { product_code: 'ARRO-5K', price_list: 'GENERAL', price: '21000', maximum_discount: '3' },
  ]);
  await loadBatch(db, tenantId, factors, [
    { product_code: 'CAFE-500', unit: 12, description: 'BOX OF 12' },
    { product_code: 'AZUC-1K', unit: 25, description: 'BALE OF 25' },
  ]);
  await loadBatch(db, tenantId, paymentMethods, [
    { code: 'EF', description: 'Cash', type: 'E' },
    { code: 'CR30', description: 'Credit 30 days', type: 'C' },
  ]);
  await loadBatch(db, tenantId, users, [
    {
      code: 'V001',
      name: 'Ana Gomez',
      type: 'VENDEDOR',
      phone: '3001234567',
      address: 'Cra 7 # 12-30, Bogota',
    },
    {
      code: 'T001',
      name: 'Luis Perez',
      type: 'TRANSPORTADOR',
      phone: '3109876543',
      address: 'Cll 45 # 8-20, Medellin',
    },
  ]);
  await loadBatch(db, tenantId, routes, [
    { client_code: 'CLI-0001', seller_code: 'V001', day: 1, frequency: 1, sequence: 1 },
    { client_code: 'CLI-0002', seller_code: 'V001', day: 3, frequency: 2, sequence: 1 },
  ]);
  const customer = (code: string, name: string, city: string, created: string, extra: object = {}) => ({
    code,
    type: 'TIENDA',
    name,
    contact: 'Encargado',
    phone: '6015550000',
    address: `Calle ${code.slice(-2)} # 10-20`,
    city,
    country: 'Colombia',
    quota: '5000000',
    term: 30,
    payment_method: 'CR30',
    price_list: 'GENERAL',
    state: 'Y',
    created_at: created,
    ...extra,
  });
  await loadBatch(db, tenantId, customers, [
    customer('CLI-0001', 'Tienda La Esquina', 'Bogota', '2026-01-05T09:30:00', {
      latitude: '4.6097100',
      longitude: '-74.0817500',
    }),
    customer('CLI-0002', 'Minimercado El Sol', 'Bogota', '2026-01-12T14:00:00', { visit_priority: 'high' }),
    customer('CLI-0003', 'Supermercado Central', 'Medellin', '2026-02-01T08:15:00', { block_sales: 'N' }),
  ]);
  const line = (item_number: number, product_code: string, quantity: string, price: string) => ({
    item_number,
    product_code,
    product_quantity: quantity,
    product_tax: '19',
    product_price: price,
    factor: 1,
  });
  await loadBatch(db, tenantId, deliveries, [
    {
      code: 'ENT-1001',
      client_id: 'CLI-0001',
      seller_id: 'T001',
      status_code: '2',
      status_description: 'Entregado',
      scheduled_date: '2026-02-10T08:00:00',
      reported_at: '2026-02-10T11:42:00',
      items: [line(1, 'CAFE-500', '6', '18500'), line(2, 'AZUC-1K', '12', '4200.50')],
    },
    {
      code: 'ENT-1002',
      client_id: 'CLI-0002',
      seller_id: 'T001',
      status_code: 'RS_PARCIAL',
      status_description: 'Parcial',
      news_code: 'N05',
      news: 'Cliente recibe parcialmente',
      scheduled_date: '2026-02-10T08:00:00',
      reported_at: '2026-02-10T15:05:00',
      items: [line(1, 'ACEI-1L', '4', '11900')],
    },
  ]);
}
