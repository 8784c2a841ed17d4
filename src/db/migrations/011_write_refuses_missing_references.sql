-- The batch write statement refuses itself when a row it wrote names a missing reference
-- (src/sql/batch-write.ts): its last step passes the count of such rows here, and a count above 0
-- raises SQLSTATE SFA01, so the statement fails whole, with or without a transaction around it. Until
-- this migration the statement only answered the count and the caller rolled back its transaction:
-- every referring write then paid BEGIN and COMMIT round trips, and a statement run outside one kept
-- the rows. docs/decisions.md, "References checked by the write".

CREATE FUNCTION refuse_missing_references(missing bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF missing > 0 THEN
    RAISE EXCEPTION '% written rows name a missing reference', missing USING ERRCODE = 'SFA01';
  END IF;
  RETURN missing;
END $$;
