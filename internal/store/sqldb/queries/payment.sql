-- name: QuoteGetByID
SELECT id, account_id, quote_type, status, amount_micros, description, attrs, expires_at, created_at, updated_at, paid_at
FROM quotes WHERE id = $1;

-- name: QuotePay
UPDATE quotes SET status = 'paid', paid_at = $2, updated_at = $2 WHERE id = $1 AND status = 'open'
RETURNING id, account_id, quote_type, status, amount_micros, description, attrs, expires_at, created_at, updated_at, paid_at;

-- name: SettlementCreate
INSERT INTO payment_settlements (id, quote_id, account_id, protocol, status, payer, nonce, credential_key, request,
    response, transaction_hash, ledger_entry_id, created_at, updated_at)
VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, '{}', '', '', $9, $9);

-- name: SettlementGetLive
SELECT id, quote_id, account_id, protocol, status, payer, nonce, credential_key, request, response, transaction_hash,
    ledger_entry_id, sent_at, created_at, updated_at
FROM payment_settlements WHERE quote_id = $1 AND status <> 'failed';

-- name: SettlementFinish
UPDATE payment_settlements SET status = $2, response = $3, transaction_hash = $4, ledger_entry_id = $5, updated_at = $6
-- A settlement the facilitator reports settled is credited even if it was
-- marked failed meanwhile (a twin's refusal): money that moved wins.
WHERE id = $1 AND (status = 'pending' OR (status = 'failed' AND $2 = 'settled'))
RETURNING id, quote_id, account_id, protocol, status, payer, nonce, credential_key, request, response, transaction_hash,
    ledger_entry_id, sent_at, created_at, updated_at;

-- name: SettlementListPending
SELECT id, quote_id, account_id, protocol, status, payer, nonce, credential_key, request, response, transaction_hash,
    ledger_entry_id, sent_at, created_at, updated_at
FROM payment_settlements WHERE status = 'pending' ORDER BY created_at, id LIMIT $1;

-- name: SettlementMarkSent
UPDATE payment_settlements SET sent_at = COALESCE(sent_at, $2) WHERE id = $1;
