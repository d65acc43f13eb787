-- What people send the operator before (or beside) having an account: the
-- waitlist for API keys and public-beta feedback (spec 2.9, 4.2, 4.8).

-- email is stored normalised (trimmed, lower case) by the caller, so the
-- unique constraint makes a repeated address one row on both engines.
CREATE TABLE waitlist (
    id         TEXT PRIMARY KEY,
    email      TEXT NOT NULL UNIQUE CHECK (email <> '' AND email = LOWER(email)),
    created_at BIGINT NOT NULL
);
CREATE INDEX waitlist_created ON waitlist (created_at, id);

-- account_id is '' for anonymous reports. job_id is kept as sent: feedback
-- about a job the sender cannot see (or that was purged) is still feedback.
CREATE TABLE feedback (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL CHECK (type IN ('bug', 'feature_request', 'provisioning', 'job_type_request')),
    title       TEXT NOT NULL CHECK (title <> ''),
    description TEXT NOT NULL CHECK (description <> ''),
    job_id      TEXT NOT NULL DEFAULT '',
    metadata    TEXT NOT NULL DEFAULT '{}',
    account_id  TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);
CREATE INDEX feedback_created ON feedback (created_at, id);
