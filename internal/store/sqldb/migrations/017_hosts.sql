-- Bring-your-own-hardware hosts (spec 1, 4.8): one-time enrollment codes
-- and the hosts that redeemed them. Codes and host credentials are kept only
-- as their hex sha256, like API keys.

-- work_kinds is 'cpu', 'gpu' or 'cpu,gpu'; rate_percent is the host's share
-- of what its tasks earn, fixed by the operator. used_at is 0 until the
-- code is redeemed, then host_id names the host it made.
CREATE TABLE host_enrollments (
    code_hash    TEXT PRIMARY KEY,
    name         TEXT NOT NULL DEFAULT '',
    work_kinds   TEXT NOT NULL CHECK (work_kinds IN ('cpu', 'gpu', 'cpu,gpu')),
    rate_percent INTEGER NOT NULL CHECK (rate_percent >= 0 AND rate_percent <= 100),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT NOT NULL DEFAULT 0,
    host_id      TEXT NOT NULL DEFAULT ''
);

-- A host's declared share (cpus, memory_mb, gpus) is what it lends, not
-- the machine's size. profile is its measured resource profile (JSON),
-- single_core_score among it. A removed host's row stays for the record;
-- its credential no longer authenticates.
CREATE TABLE hosts (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('active', 'draining', 'removed')),
    work_kinds      TEXT NOT NULL CHECK (work_kinds IN ('cpu', 'gpu', 'cpu,gpu')),
    rate_percent    INTEGER NOT NULL CHECK (rate_percent >= 0 AND rate_percent <= 100),
    cpus            DOUBLE PRECISION NOT NULL CHECK (cpus > 0),
    memory_mb       BIGINT NOT NULL CHECK (memory_mb > 0),
    gpus            INTEGER NOT NULL CHECK (gpus >= 0),
    hostname        TEXT NOT NULL DEFAULT '',
    profile         TEXT NOT NULL DEFAULT '{}',
    credential_hash TEXT NOT NULL UNIQUE,
    created_at      BIGINT NOT NULL,
    last_seen_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX hosts_created ON hosts (created_at, id);
