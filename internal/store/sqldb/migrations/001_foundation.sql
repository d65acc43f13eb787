-- Foundation: accounts, keys, money, projects, shared state, pushes.
-- Times are BIGINT unix microseconds (UTC) in both engines so that rows scan
-- into the same Go types; money is BIGINT micro-USD.

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    role        TEXT NOT NULL CHECK (role IN ('member', 'viewer', 'admin')),
    secret_hash TEXT NOT NULL UNIQUE,
    hint        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE TABLE ledger_entries (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    entry_type    TEXT NOT NULL,
    amount_micros BIGINT NOT NULL,
    reference     TEXT NOT NULL DEFAULT '',
    description   TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at);

CREATE TABLE holds (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    job_id          TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL CHECK (status IN ('active', 'released', 'captured', 'partially_captured', 'expired')),
    amount_micros   BIGINT NOT NULL CHECK (amount_micros >= 0),
    captured_micros BIGINT NOT NULL DEFAULT 0 CHECK (captured_micros >= 0 AND captured_micros <= amount_micros),
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    settled_at      BIGINT
);
CREATE INDEX holds_account_status ON holds (account_id, status);

CREATE TABLE quotes (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    quote_type    TEXT NOT NULL CHECK (quote_type IN ('x402_topup', 'job_shortfall', 'generic')),
    status        TEXT NOT NULL CHECK (status IN ('open', 'paid', 'expired', 'cancelled', 'consumed')),
    amount_micros BIGINT NOT NULL CHECK (amount_micros > 0),
    description   TEXT NOT NULL DEFAULT '',
    attrs         TEXT NOT NULL DEFAULT '{}',
    expires_at    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    paid_at       BIGINT
);
CREATE INDEX quotes_account_status ON quotes (account_id, status);

CREATE TABLE projects (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    name            TEXT NOT NULL,
    remote_dir      TEXT NOT NULL DEFAULT '',
    env             TEXT NOT NULL DEFAULT '{}',
    setup_timeout_s BIGINT NOT NULL CHECK (setup_timeout_s > 0),
    runtime_kind    TEXT NOT NULL CHECK (runtime_kind = 'oci'),
    image_ref       TEXT NOT NULL DEFAULT '',
    image_digest    TEXT NOT NULL DEFAULT '',
    manifest        TEXT NOT NULL DEFAULT 'null',
    cache_policy    TEXT NOT NULL DEFAULT 'null',
    runtime_version BIGINT NOT NULL CHECK (runtime_version > 0),
    content_hash    TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE project_kv (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    ttl_s      BIGINT CHECK (ttl_s > 0),
    expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, key)
);

CREATE TABLE pushes (
    id           TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    status       TEXT NOT NULL CHECK (status IN ('queued', 'building', 'published', 'failed')),
    content_hash TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    tarball_diff TEXT NOT NULL DEFAULT 'null',
    file_index   TEXT NOT NULL DEFAULT '{}',
    manifest     TEXT NOT NULL DEFAULT 'null',
    context_dir  TEXT NOT NULL DEFAULT '',
    image_ref    TEXT NOT NULL DEFAULT '',
    image_digest TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    next_action  TEXT NOT NULL DEFAULT '',
    log_tail     TEXT NOT NULL DEFAULT '',
    attempts     BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    started_at   BIGINT,
    finished_at  BIGINT
);
CREATE INDEX pushes_project ON pushes (project_id, created_at);
CREATE INDEX pushes_status ON pushes (status);
