-- Each engine overrides this file: the ledger refuses UPDATE and DELETE at the
-- database level, so no code path can rewrite money history.
SELECT 1;
