-- name: AccountCreate
INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3)
RETURNING id, name, created_at;

-- name: AccountGetByName
SELECT id, name, created_at FROM accounts WHERE name = $1;

-- name: AccountGetByID
SELECT id, name, created_at FROM accounts WHERE id = $1;

-- name: APIKeyCreate
INSERT INTO api_keys (id, account_id, role, secret_hash, hint, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, account_id, role, secret_hash, hint, created_at, revoked_at;

-- name: PrincipalGetByKeyHash
SELECT k.id, k.account_id, k.role, k.secret_hash, k.hint, k.created_at, k.revoked_at,
       a.id, a.name, a.created_at
FROM api_keys k JOIN accounts a ON a.id = k.account_id
WHERE k.secret_hash = $1 AND k.revoked_at IS NULL;

-- name: LedgerEntryCreate
INSERT INTO ledger_entries (id, account_id, entry_type, amount_micros, reference, description, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id, account_id, entry_type, amount_micros, reference, description, created_at;

-- name: BalanceGet
-- The ledger and hold totals are running sums on the account row (migration
-- 011, kept by triggers). $2 is "now": a quote past its expiry no longer
-- counts as open even before a sweeper marks it expired.
SELECT
    COALESCE((SELECT ledger_micros FROM accounts WHERE id = $1), 0),
    COALESCE((SELECT held_micros FROM accounts WHERE id = $1), 0),
    COALESCE((SELECT active_holds FROM accounts WHERE id = $1), 0),
    (SELECT COUNT(*) FROM quotes WHERE account_id = $1 AND status = 'open' AND expires_at > $2);
