-- name: WalletChallengePurgeExpired
DELETE FROM wallet_challenges WHERE id IN (
    SELECT id FROM wallet_challenges WHERE expires_at < $1 ORDER BY expires_at, id LIMIT $2);

-- name: WalletSessionPurgeExpired
DELETE FROM wallet_sessions WHERE id IN (
    SELECT id FROM wallet_sessions WHERE expires_at < $1 ORDER BY expires_at, id LIMIT $2);

-- name: QuotePurgeExpired
-- Paid and consumed quotes are money history and stay; so does any quote a
-- settlement names (its foreign key, and the record of what was tried).
DELETE FROM quotes WHERE id IN (
    SELECT q.id FROM quotes q
    WHERE q.status IN ('open', 'expired', 'cancelled') AND q.expires_at < $1
      AND NOT EXISTS (SELECT 1 FROM payment_settlements s WHERE s.quote_id = q.id)
    ORDER BY q.expires_at, q.id LIMIT $2);

-- name: WalletSessionRevoke
DELETE FROM wallet_sessions WHERE secret_hash = $1;
