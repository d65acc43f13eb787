-- Holds, metering and idempotency keys (store/billing.go).

-- name: AccountLock
-- SQLite serialises writers; the row is only read. PostgreSQL overrides it
-- with FOR UPDATE.
SELECT id FROM accounts WHERE id = $1;

-- name: HoldCreate
INSERT INTO holds (id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at)
VALUES ($1, $2, $3, 'active', $4, 0, $5, $5)
RETURNING id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at, settled_at;

-- name: HoldGetByJob
-- "job_id <> ''" lets the planner use the partial unique index holds_job;
-- without it every call scans all holds.
SELECT id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at, settled_at
FROM holds WHERE job_id = $1 AND job_id <> '';

-- name: HoldCapture
-- Ends an active hold (captured, partially captured or released). The
-- column keeps its first name, settled_at: renaming it needs a migration.
UPDATE holds SET status = $2, captured_micros = $3, settled_at = $4, updated_at = $4
WHERE id = $1 AND status = 'active'
RETURNING id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at, settled_at;

-- name: HoldGrow
-- A re-priced job's hold grows in place (a hold is one per job, holds_job);
-- the balance totals' trigger moves the difference into held_micros. $4 is
-- the amount the caller read: a concurrent change makes this a no-op.
UPDATE holds SET amount_micros = $2, updated_at = $3
WHERE id = $1 AND status = 'active' AND amount_micros = $4 AND $2 > amount_micros
RETURNING id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at, settled_at;

-- name: HoldExists
SELECT COUNT(*) FROM holds WHERE id = $1;

-- name: HoldList
SELECT id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at, settled_at
FROM holds WHERE account_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR job_id = $3)
ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5;

-- name: HoldCount
SELECT COUNT(*) FROM holds WHERE account_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR job_id = $3);

-- name: LedgerList
SELECT id, account_id, entry_type, amount_micros, reference, description, created_at
FROM ledger_entries WHERE account_id = $1 AND ($2 = '' OR entry_type = $2)
ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4;

-- name: LedgerCount
SELECT COUNT(*) FROM ledger_entries WHERE account_id = $1 AND ($2 = '' OR entry_type = $2);

-- name: QuoteList
-- $4 is now: an open quote past its expiry is listed (and filtered) as expired.
SELECT id, account_id, quote_type,
       CASE WHEN status = 'open' AND expires_at <= $4 THEN 'expired' ELSE status END,
       amount_micros, description, attrs, expires_at, created_at, updated_at, paid_at
FROM quotes
WHERE account_id = $1 AND ($3 = '' OR quote_type = $3)
  AND ($2 = '' OR (CASE WHEN status = 'open' AND expires_at <= $4 THEN 'expired' ELSE status END) = $2)
ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6;

-- name: QuoteCount
SELECT COUNT(*) FROM quotes
WHERE account_id = $1 AND ($3 = '' OR quote_type = $3)
  AND ($2 = '' OR (CASE WHEN status = 'open' AND expires_at <= $4 THEN 'expired' ELSE status END) = $2);

-- name: AttemptSetCost
UPDATE attempts SET billed_seconds = $2, cost_micros = $3 WHERE id = $1;

-- name: JobChargeTotal
SELECT COALESCE(SUM(cost_micros), 0) FROM attempts WHERE job_id = $1;

-- name: JobMeterTotal
SELECT COALESCE(SUM(billed_seconds), 0), COALESCE(SUM(cost_micros), 0) FROM attempts WHERE job_id = $1;

-- name: IdempotencyKeyPut
INSERT INTO idempotency_keys (account_id, key, request_hash, response, created_at) VALUES ($1, $2, $3, $4, $5);

-- name: IdempotencyKeyGet
SELECT account_id, key, request_hash, response, created_at FROM idempotency_keys WHERE account_id = $1 AND key = $2;

-- name: HoldReserve
-- A job's hold, created only when the account's available balance covers
-- it: one statement, so that an admission holds no lock across a round
-- trip (store.BillingStore.HoldReserve). Returns the balance available
-- before the hold and the hold's id; no row when the balance is short.
-- SQLite serialises writers, so the check and the insert cannot be
-- separated. Its RETURNING subquery reads the account before the totals'
-- trigger adds the hold (RETURNING values are the statement's own, not
-- the triggers'; the conformance test HoldReserve checks it). PostgreSQL
-- overrides it.
INSERT INTO holds (id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at)
SELECT $1, $2, $3, 'active', $4, 0, $5, $5 FROM accounts WHERE id = $2 AND ledger_micros - held_micros >= $4
RETURNING (SELECT ledger_micros - held_micros FROM accounts WHERE id = $2), id;

-- name: AccountAvailable
SELECT ledger_micros - held_micros FROM accounts WHERE id = $1;

-- name: JobBillingSet
UPDATE jobs SET billing = $2 WHERE id = $1;
