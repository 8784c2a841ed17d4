-- References to products are checked by the batch write statement itself (src/sql/batch-write.ts):
-- it counts, as a set and in its own snapshot, the rows whose product_code names no product of the
-- tenant, and writes nothing when any does. The foreign keys did the same check one row at a time,
-- each with a trigger call and a FOR KEY SHARE lock on the product row: 40 of the 113 ms that 10,000
-- stocks took. Products are never deleted (no endpoint or command deletes master data), so a check at
-- write time is all the keys added. docs/decisions.md, "References checked by the write".

ALTER TABLE stocks DROP CONSTRAINT stocks_tenant_id_product_code_fkey;
ALTER TABLE factors DROP CONSTRAINT factors_tenant_id_product_code_fkey;
ALTER TABLE prices DROP CONSTRAINT prices_tenant_id_product_code_fkey;
