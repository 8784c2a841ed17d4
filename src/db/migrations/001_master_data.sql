-- Tenants and the master data loaded by the batch endpoints (backoffice-api.md 4.4 to 4.9,
-- extensions.md 3). tenant_id leads every key: every query is per tenant, and the schema can be
-- distributed by tenant when one server is not enough.
-- Timestamps are UTC wall-clock time without zone, as the API shows them (yyyy-MM-ddTHH:mm:ss).
-- Column lengths and precisions repeat the field tables of src/resources; a test checks they agree.

CREATE TABLE tenants (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  created_at timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')
);

CREATE TABLE products (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  code varchar(20) NOT NULL,
  description varchar(100) NOT NULL,
  unit varchar(20),
  tax numeric(5, 2),
  state varchar(1) NOT NULL,
  created_at timestamp NOT NULL,
  updated_at timestamp,
  PRIMARY KEY (tenant_id, code)
);

-- available is the spec's DISPONIBLE, created_at its FECHA_CREA.
CREATE TABLE stocks (
  tenant_id integer NOT NULL,
  product_code varchar(20) NOT NULL,
  location varchar(20) NOT NULL,
  quantity numeric(18, 2),
  factor_description varchar(20),
  available varchar(1) NOT NULL,
  created_at timestamp NOT NULL,
  PRIMARY KEY (tenant_id, product_code, location),
  FOREIGN KEY (tenant_id, product_code) REFERENCES products (tenant_id, code)
);

-- The three statuses are the default statuses of invoices, quotes and returns (APROBADO).
CREATE TABLE payment_methods (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  code varchar(10) NOT NULL,
  description varchar(50) NOT NULL,
  type varchar(1),
  invoice_status varchar(20) NOT NULL,
  quote_status varchar(20) NOT NULL,
  return_status varchar(20) NOT NULL,
  created_at timestamp NOT NULL,
  PRIMARY KEY (tenant_id, code)
);

-- state is the spec's ESTADO.
CREATE TABLE factors (
  tenant_id integer NOT NULL,
  product_code varchar(20) NOT NULL,
  unit numeric(18, 2) NOT NULL,
  description varchar(20) NOT NULL,
  volume numeric(18, 2),
  weight numeric(18, 2),
  minimum_sale numeric(18, 2),
  state varchar(1) NOT NULL,
  created_at timestamp NOT NULL,
  PRIMARY KEY (tenant_id, product_code, unit),
  FOREIGN KEY (tenant_id, product_code) REFERENCES products (tenant_id, code)
);

CREATE TABLE routes (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  client_code varchar(18) NOT NULL,
  seller_code varchar(18) NOT NULL,
  day numeric(1, 0) NOT NULL,
  frequency integer NOT NULL,
  sequence integer,
  created_at timestamp NOT NULL,
  PRIMARY KEY (tenant_id, client_code, seller_code, day)
);

-- state is the spec's VENDEDOR_ESTADO.
CREATE TABLE users (
  tenant_id integer NOT NULL REFERENCES tenants (id),
  code varchar(18) NOT NULL,
  name varchar(50) NOT NULL,
  type varchar(30) NOT NULL,
  phone varchar(20) NOT NULL,
  address varchar(300) NOT NULL,
  email varchar(50),
  city varchar(50),
  country varchar(50),
  region varchar(50),
  location varchar(20),
  cedula varchar(18),
  operation_center varchar(10),
  state varchar(1) NOT NULL,
  created_at timestamp NOT NULL,
  PRIMARY KEY (tenant_id, code)
);

CREATE TABLE prices (
  tenant_id integer NOT NULL,
  product_code varchar(20) NOT NULL,
  price_list varchar(20) NOT NULL,
  price numeric(18, 2) NOT NULL,
  maximum_discount numeric(10, 2),
  maximum_discount2 numeric(10, 2),
  maximum_discount3 numeric(10, 2),
  base_price numeric(18, 2),
  minimum_price numeric(18, 2),
  maximum_price numeric(18, 2),
  charges numeric(18, 2),
  factor_description varchar(20),
  created_at timestamp NOT NULL,
  updated_at timestamp,
  PRIMARY KEY (tenant_id, product_code, price_list),
  FOREIGN KEY (tenant_id, product_code) REFERENCES products (tenant_id, code)
);
