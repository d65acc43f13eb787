-- Each engine overrides this file: the account row keeps running totals of
-- its ledger and active holds, maintained by triggers, so that a balance
-- (read under the account lock on every job admission) costs one row read
-- however long the ledger and however many jobs hold money.
SELECT 1;
