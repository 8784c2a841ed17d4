-- Customers (backoffice-api.md 2.1) and deliveries with their items (2.2, 2.3), loaded by
-- extensions.md 3 and read by GET /v1/customers and GET /v1/deliveries/pending.
-- Lengths and precisions repeat src/resources/customers.ts and deliveries.ts (a test checks).

CREATE TABLE customers (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  code varchar(18) NOT NULL,
  type varchar(30) NOT NULL,
  name varchar(150) NOT NULL,
  contact varchar(100) NOT NULL,
  phone varchar(30) NOT NULL,
  email varchar(100),
  email2 varchar(100),
  address varchar(300) NOT NULL,
  city varchar(50) NOT NULL,
  country varchar(50),
  region varchar(50),
  quota numeric(18, 2) NOT NULL,
  term integer NOT NULL,
  payment_method varchar(10) NOT NULL,
  price_list varchar(20),
  location varchar(20),
  nit varchar(20),
  discount numeric(5, 2),
  discount_list varchar(20),
  observations varchar(500),
  name_est varchar(150),
  short_name varchar(50),
  operation_center varchar(10),
  block_sales varchar(1),
  commercial_discount numeric(5, 2),
  discount_base numeric(18, 2),
  withholding_base numeric(18, 2),
  withholding numeric(18, 2),
  corporate_client varchar(20),
  real_quota numeric(18, 2),
  state varchar(1) NOT NULL,
  parent_client varchar(18),
  latitude numeric(10, 7),
  longitude numeric(10, 7),
  visit_priority varchar(7),
  time_window_start varchar(5),
  time_window_end varchar(5),
  service_duration_minutes integer,
  seller_can_edit varchar(1),
  seller_can_inactivate varchar(1),
  tax_exempt varchar(1),
  apply_associated_scales varchar(1),
  apply_associated_surveys varchar(1),
  transmitted varchar(1),
  created_at timestamp NOT NULL,
  created_user_code varchar(18),
  updated_at timestamp,
  updated_user_code varchar(18),
  inactivation_at timestamp,
  georeferenced_at timestamp,
  georeferenced_source varchar(9),
  georeferenced_user_code varchar(18),
  creation_source integer,
  is_prospect varchar(1),
  prospect_code varchar(18),
  approval_state integer,
  approver_user_code varchar(18),
  rejection_reason varchar(100),
  rejection_observations varchar(500),
  reactivation_at timestamp,
  reactivation_user_code varchar(18),
  reactivation_reason varchar(100),
  reactivation_observations varchar(500),
  PRIMARY KEY (tenant_id, code)
);

-- GET /v1/customers: default and explicit sort by creation date with the code as unique tie-break,
-- and the modified_from filter.
CREATE INDEX customers_created ON customers (tenant_id, created_at, code);
CREATE INDEX customers_updated ON customers (tenant_id, updated_at) WHERE updated_at IS NOT NULL;

-- acknowledged_at: when the integrator said the delivery reached the ERP (extensions.md 4).
CREATE TABLE deliveries (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  code varchar(30) NOT NULL,
  client_id varchar(18) NOT NULL,
  seller_id varchar(18) NOT NULL,
  status_code varchar(20) NOT NULL,
  status_description varchar(100),
  news_code varchar(20),
  news varchar(200),
  scheduled_date timestamp NOT NULL,
  scheduled_end_date timestamp,
  reported_at timestamp,
  observations varchar(500),
  latitude numeric(10, 7),
  longitude numeric(10, 7),
  cell_info varchar(200),
  transmission_date timestamp,
  management_code varchar(30),
  visit_time integer,
  manifest varchar(50),
  weight numeric(18, 2),
  volume numeric(18, 2),
  created_at timestamp NOT NULL,
  updated_at timestamp,
  add_route_planner varchar(1),
  planned_duration integer,
  visit_priority varchar(20),
  seller_observations varchar(500),
  rescheduling_cause varchar(100),
  rescheduling_observations varchar(500),
  address varchar(300),
  warehouse varchar(20),
  location varchar(20),
  invoice_seller_id varchar(18),
  voucher varchar(2048) NOT NULL,
  signature varchar(2048) NOT NULL,
  acknowledged_at timestamp,
  PRIMARY KEY (tenant_id, code)
);

-- GET /v1/deliveries/pending: only unacknowledged rows, by reported date with the code as unique
-- tie-break. Scanned forwards for "-reported_at" (nulls last) and backwards for "reported_at".
CREATE INDEX deliveries_pending ON deliveries (tenant_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL;

CREATE TABLE delivery_items (
  tenant_id integer NOT NULL,
  delivery_code varchar(30) NOT NULL,
  item_number integer NOT NULL,
  product_code varchar(20) NOT NULL,
  product_quantity numeric(18, 2) NOT NULL,
  product_tax numeric(5, 2) NOT NULL,
  product_price numeric(18, 2) NOT NULL,
  charge_values numeric(18, 2),
  discount1 numeric(5, 2),
  observations varchar(500),
  factor numeric(18, 2) NOT NULL,
  factor_description varchar(20),
  PRIMARY KEY (tenant_id, delivery_code, item_number),
  FOREIGN KEY (tenant_id, delivery_code) REFERENCES deliveries (tenant_id, code)
);

-- The client_id and seller_id filters of the pending list.
CREATE INDEX deliveries_pending_client ON deliveries (tenant_id, client_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL;
CREATE INDEX deliveries_pending_seller ON deliveries (tenant_id, seller_id, reported_at DESC NULLS LAST, code DESC)
  WHERE acknowledged_at IS NULL;
