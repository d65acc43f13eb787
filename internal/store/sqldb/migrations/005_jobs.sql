-- Jobs, their tasks, the attempts that run them, and their lifecycle events.
--
-- Status columns carry CHECKs listing the constants of store/job.go, and the
-- timestamps that go with a status are tied to it (a terminal row has its end
-- time, an open one has none), so an impossible row cannot be stored.
-- JSON that is always present is NOT NULL with a default for "absent"; JSON
-- that may be missing (a task's result or progress) is NULL.

-- A job belongs to an account and names its project by id and by name. There
-- is no foreign key to projects: a project may be deleted once none of its
-- jobs is active (spec 4.4), and its finished jobs stay queryable for their
-- retention period (spec 3.1).
CREATE TABLE jobs (
    id                 TEXT PRIMARY KEY,
    account_id         TEXT NOT NULL REFERENCES accounts (id),
    project_id         TEXT NOT NULL,
    project_name       TEXT NOT NULL,
    push_id            TEXT NOT NULL DEFAULT '',
    type               TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('planning', 'queued', 'running', 'completed', 'partial', 'failed', 'cancelled')),
    priority           BIGINT NOT NULL CHECK (priority IN (0, 1, 2)),
    request            TEXT NOT NULL DEFAULT '{}',
    payload            TEXT NOT NULL DEFAULT 'null',
    summary            TEXT NOT NULL DEFAULT '{}',
    error              TEXT NOT NULL DEFAULT '',
    recommended_action TEXT NOT NULL DEFAULT '',
    client_ref         TEXT,
    tags               TEXT NOT NULL DEFAULT '[]', -- JSON array as submitted; job_tags indexes it
    meta               TEXT NOT NULL DEFAULT 'null',
    variant            TEXT,
    task_count         BIGINT NOT NULL CHECK (task_count >= 0),
    submitted_at       BIGINT NOT NULL,
    started_at         BIGINT,
    finished_at        BIGINT,
    updated_at         BIGINT NOT NULL,
    CHECK ((status IN ('completed', 'partial', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CHECK (status <> 'running' OR started_at IS NOT NULL)
);
-- GET /jobs: an account's jobs newest first, optionally since a time; the
-- other indexes serve the status, type and project filters of that list.
CREATE INDEX jobs_account_submitted ON jobs (account_id, submitted_at, id);
CREATE INDEX jobs_account_status ON jobs (account_id, status, submitted_at);
CREATE INDEX jobs_account_type ON jobs (account_id, type, submitted_at);
-- The project filter (project ids are unique across accounts) and the count
-- of a project's active jobs.
CREATE INDEX jobs_project_status ON jobs (project_id, status, submitted_at);

-- One row per tag of a job, so that the tag filter is an indexed lookup.
-- account_id is repeated here so that a tag common to many accounts does not
-- make one account's lookup read everyone's jobs.
CREATE TABLE job_tags (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    tag        TEXT NOT NULL,
    PRIMARY KEY (job_id, tag)
);
CREATE INDEX job_tags_account_tag ON job_tags (account_id, tag, job_id);

CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    job_id          TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx             BIGINT NOT NULL CHECK (idx >= 0),
    status          TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    payload         TEXT NOT NULL DEFAULT '{}',
    meta            TEXT NOT NULL DEFAULT '{}',
    requirements    TEXT NOT NULL DEFAULT '{}',
    priority        BIGINT NOT NULL CHECK (priority IN (0, 1, 2)),
    retries_used    BIGINT NOT NULL DEFAULT 0 CHECK (retries_used >= 0),
    infra_requeues  BIGINT NOT NULL DEFAULT 0 CHECK (infra_requeues >= 0),
    declared_infra  BIGINT NOT NULL DEFAULT 0 CHECK (declared_infra >= 0),
    attempts        BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    result          TEXT,
    output          TEXT NOT NULL DEFAULT '',
    error           TEXT NOT NULL DEFAULT '',
    latest_progress TEXT,
    exit_code       BIGINT,
    last_host_id    TEXT NOT NULL DEFAULT '',
    submitted_at    BIGINT NOT NULL, -- the job's, so that its tasks queue together
    started_at      BIGINT,          -- first start
    completed_at    BIGINT,
    updated_at      BIGINT NOT NULL,
    UNIQUE (job_id, idx), -- also the index for a job's tasks in order
    CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (completed_at IS NOT NULL)),
    CHECK (status <> 'running' OR (attempts > 0 AND started_at IS NOT NULL))
);
-- The dispatch order of TaskClaim. Partial, so it holds only queued tasks: a
-- claim reads its first entries however many tasks have ever run.
CREATE INDEX tasks_dispatch ON tasks (priority, submitted_at, job_id, idx) WHERE status = 'queued';
-- A job's tasks by status: counts, and cancelling the open ones.
CREATE INDEX tasks_job_status ON tasks (job_id, status);

CREATE TABLE attempts (
    id               TEXT PRIMARY KEY,
    task_id          TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    job_id           TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    number           BIGINT NOT NULL CHECK (number > 0),
    status           TEXT NOT NULL CHECK (status IN ('assigned', 'running', 'succeeded', 'failed', 'infra', 'lost', 'cancelled')),
    host_id          TEXT NOT NULL,
    resource_profile TEXT NOT NULL DEFAULT '{}',
    exit_code        BIGINT,
    terminal_kind    TEXT NOT NULL DEFAULT '',
    retry_decision   TEXT NOT NULL DEFAULT '',
    assigned_at      BIGINT NOT NULL,
    started_at       BIGINT,
    ended_at         BIGINT,
    updated_at       BIGINT NOT NULL,
    UNIQUE (task_id, number), -- also the index for a task's attempts
    CHECK ((status IN ('assigned', 'running')) = (ended_at IS NULL)),
    CHECK (status <> 'running' OR started_at IS NOT NULL)
);
CREATE INDEX attempts_job ON attempts (job_id);
-- Open attempts, by host: recovery after a restart or a lost host. Partial,
-- so it stays as small as the work in flight.
CREATE INDEX attempts_open_host ON attempts (host_id, assigned_at) WHERE status IN ('assigned', 'running');

CREATE TABLE job_events (
    id         TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL DEFAULT '',
    attempt_id TEXT NOT NULL DEFAULT '',
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL
);
CREATE INDEX job_events_job ON job_events (job_id, created_at, id);
