-- name: WalletChallengeCreate
INSERT INTO wallet_challenges (id, chain, address, nonce, message, status, expires_at, created_at)
VALUES ($1, $2, $3, $4, $5, 'open', $6, $7);

-- name: WalletChallengeGet
SELECT id, chain, address, nonce, message, status, expires_at, created_at, used_at
FROM wallet_challenges WHERE id = $1;

-- name: WalletChallengeUse
UPDATE wallet_challenges SET status = 'used', used_at = $2 WHERE id = $1 AND status = 'open';

-- name: WalletGet
SELECT chain, address, account_id, created_at FROM wallets WHERE chain = $1 AND address = $2;

-- name: WalletCreate
INSERT INTO wallets (chain, address, account_id, created_at) VALUES ($1, $2, $3, $4);

-- name: WalletSessionCreate
INSERT INTO wallet_sessions (id, account_id, chain, address, secret_hash, expires_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: PrincipalGetBySessionHash
SELECT s.id, s.account_id, s.secret_hash, s.created_at, a.id, a.name, a.created_at
FROM wallet_sessions s JOIN accounts a ON a.id = s.account_id
WHERE s.secret_hash = $1 AND s.expires_at > $2;
