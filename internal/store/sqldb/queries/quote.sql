-- name: QuoteCreate
INSERT INTO quotes (id, account_id, quote_type, status, amount_micros, description, attrs, expires_at, created_at, updated_at)
VALUES ($1, $2, $3, 'open', $4, $5, $6, $7, $8, $8)
RETURNING id, account_id, quote_type, status, amount_micros, description, attrs, expires_at, created_at, updated_at, paid_at;

-- name: QuoteGet
SELECT id, account_id, quote_type, status, amount_micros, description, attrs, expires_at, created_at, updated_at, paid_at
FROM quotes WHERE account_id = $1 AND id = $2;
