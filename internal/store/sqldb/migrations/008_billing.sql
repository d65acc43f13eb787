-- Billing of jobs (spec section 1, 2.8).
--
-- A job carries the billed rate it was admitted at (market rate plus the
-- service markup, micro-USD per hour of its capacity class) and the billing
-- objects shown in its summary; every attempt carries what it was metered:
-- billed seconds (60 at least, timeout_s at most) and micro-USD. Attempts
-- the platform lost cost nothing and keep zeros.
ALTER TABLE jobs ADD COLUMN rate_micros_per_hour BIGINT NOT NULL DEFAULT 0 CHECK (rate_micros_per_hour >= 0);
ALTER TABLE jobs ADD COLUMN billing TEXT NOT NULL DEFAULT '{}';
ALTER TABLE attempts ADD COLUMN billed_seconds BIGINT NOT NULL DEFAULT 0 CHECK (billed_seconds >= 0);
ALTER TABLE attempts ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0 CHECK (cost_micros >= 0);

-- One hold per job, settled once.
CREATE UNIQUE INDEX holds_job ON holds (job_id) WHERE job_id <> '';
CREATE INDEX holds_account_created ON holds (account_id, created_at, id);
CREATE INDEX quotes_account_created ON quotes (account_id, created_at, id);

-- Idempotency-Key of POST /jobs and /jobs/batch: the first request's body
-- hash and what it created, so that a resend returns the same answer.
CREATE TABLE idempotency_keys (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response     TEXT NOT NULL DEFAULT '', -- what the first request created, as the caller's service records it
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);
