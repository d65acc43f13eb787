-- Wallet sign-in and payments (spec 2.2, 2.8, 4.2, 4.3, 5).
--
-- A wallet (chain, lower-case address) belongs to exactly one account,
-- created at its first sign-in.
CREATE TABLE wallets (
    chain      TEXT NOT NULL,
    address    TEXT NOT NULL CHECK (address = lower(address) AND length(address) = 42),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (chain, address)
);

-- A challenge is used once (open -> used) and lives five minutes.
CREATE TABLE wallet_challenges (
    id         TEXT PRIMARY KEY,
    chain      TEXT NOT NULL,
    address    TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    message    TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('open', 'used')),
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT
);

-- A session token (fls_...) is stored as its hash, like an API key.
CREATE TABLE wallet_sessions (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    chain       TEXT NOT NULL,
    address     TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    expires_at  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);

-- A settlement of a quote: recorded as an intent (pending) before the
-- facilitator is asked to settle, finished (settled, with the ledger
-- credit and the quote paid, in one transaction) or refused (failed).
-- At most one live settlement per quote, and one per authorization
-- (payer, nonce), so that neither a race nor a crash credits twice.
CREATE TABLE payment_settlements (
    id             TEXT PRIMARY KEY,
    quote_id       TEXT NOT NULL REFERENCES quotes (id),
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    protocol       TEXT NOT NULL CHECK (protocol IN ('x402', 'mpp')),
    status         TEXT NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
    payer          TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    credential_key TEXT NOT NULL,
    request        TEXT NOT NULL, -- the facilitator request, to finish it after a crash
    response       TEXT NOT NULL DEFAULT '{}', -- the facilitator's settle answer
    transaction_hash TEXT NOT NULL DEFAULT '',
    ledger_entry_id TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX payment_settlements_live_quote ON payment_settlements (quote_id) WHERE status <> 'failed';
CREATE UNIQUE INDEX payment_settlements_live_auth ON payment_settlements (payer, nonce) WHERE status <> 'failed';
CREATE INDEX payment_settlements_pending ON payment_settlements (status) WHERE status = 'pending';
