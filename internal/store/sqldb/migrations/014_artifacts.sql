-- Artifacts: files that jobs move in and out (spec 2.7, 4.7).
--
-- A row is one artifact an account sees; its bytes live in the blob store
-- under sha256, so identical content uploaded twice is two rows and one
-- blob, and counts once against the account's quota. deleted_at hides a row
-- at once (the quota is freed); the sweeper removes the row, and the blob
-- when no other row holds the content, once the grace has passed.
CREATE TABLE artifacts (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    sha256      TEXT NOT NULL DEFAULT '', -- '' for an external artifact registered without one
    size_bytes  BIGINT NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
    filename    TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL CHECK (source IN ('local', 'external')),
    url         TEXT NOT NULL DEFAULT '', -- external artifacts only
    -- The producing job and task, when a job produced it (a task output or
    -- an upload naming X-Artifact-Job-Id). No foreign key: retention
    -- purges old jobs and their artifacts stay.
    job_id      TEXT NOT NULL DEFAULT '',
    task_id     TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL DEFAULT 'upload' CHECK (kind IN ('upload', 'output', 'failed_output', 'result', 'log')),
    created_at  BIGINT NOT NULL,
    deleted_at  BIGINT,
    CHECK ((source = 'local') = (url = '')),
    CHECK (source = 'external' OR length(sha256) = 64)
);
-- GET /artifacts and the quota: an account's visible artifacts.
CREATE INDEX artifacts_account ON artifacts (account_id, created_at, id) WHERE deleted_at IS NULL;
-- Whether any row still holds a blob, and the sweeper's grace deletions.
CREATE INDEX artifacts_sha ON artifacts (sha256);
-- A job's outputs, for its task views.
CREATE INDEX artifacts_job ON artifacts (job_id, created_at, id) WHERE job_id <> '';
CREATE INDEX artifacts_deleted ON artifacts (deleted_at) WHERE deleted_at IS NOT NULL;

-- A reference: a job that produces (output) or consumes (input) an
-- artifact. Purging a job removes its references.
CREATE TABLE artifact_refs (
    artifact_id TEXT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('input', 'output')),
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (artifact_id, job_id, role)
);
CREATE INDEX artifact_refs_job ON artifact_refs (job_id);

-- Retention (spec 8): the sweeper purges terminal jobs by finish time.
CREATE INDEX jobs_finished ON jobs (finished_at, id) WHERE finished_at IS NOT NULL;
