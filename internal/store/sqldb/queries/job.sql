-- Jobs, tasks, attempts and job events.
--
-- Three conventions let the Go code (sqldb/job.go, sqldb/sqlbuild.go) reuse
-- these texts where a statement's shape depends on its input; values are
-- always bound as parameters, never written into the text:
--
-- * List placeholder: a query's highest-numbered parameter, written once as
--   "($N)" after IN, stands for a list; the Go code rewrites it to
--   "($N, $N+1, ...)" with one parameter per value.
-- * Repeated VALUES tuple: in a *Batch insert, the parameters below a stated
--   number are shared by every row; the Go code repeats the VALUES tuple once
--   per row, renumbering the other placeholders by their count for each row,
--   so one statement inserts a whole batch.
-- * Fragments (JobList*): each is numbered from $1 on its own; the Go code
--   appends the ones a request needs and shifts their numbers after the
--   parameters already bound.

-- name: JobCreate
INSERT INTO jobs (id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
                  summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
                  submitted_at, updated_at, rate_micros_per_hour, billing)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19, $20, $21)
RETURNING id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
          summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
          submitted_at, started_at, finished_at, updated_at, rate_micros_per_hour, billing;

-- name: JobTagCreateBatch
-- Shared: $1 job_id, $2 account_id. Per row: $3 tag.
INSERT INTO job_tags (job_id, account_id, tag) VALUES ($1, $2, $3);

-- name: TaskCreateBatch
-- Shared: $1 job_id, $2 priority, $3 submitted_at (also updated_at).
-- Per row: $4 id, $5 idx, $6 payload, $7 meta, $8 requirements, $9 req_cpu,
-- $10 req_memory_mb, $11 req_gpus.
INSERT INTO tasks (job_id, priority, submitted_at, updated_at, status, id, idx, payload, meta, requirements,
                   req_cpu, req_memory_mb, req_gpus)
VALUES ($1, $2, $3, $3, 'queued', $4, $5, $6, $7, $8, $9, $10, $11);

-- name: JobGet
SELECT id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
       summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
       submitted_at, started_at, finished_at, updated_at, rate_micros_per_hour, billing
FROM jobs WHERE account_id = $1 AND id = $2;

-- name: JobGetByID
SELECT id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
       summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
       submitted_at, started_at, finished_at, updated_at, rate_micros_per_hour, billing
FROM jobs WHERE id = $1;

-- name: JobExists
SELECT COUNT(*) FROM jobs WHERE id = $1;

-- name: JobListSelect
SELECT id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
       summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
       submitted_at, started_at, finished_at, updated_at, rate_micros_per_hour, billing
FROM jobs WHERE account_id = $1

-- name: JobListCount
SELECT COUNT(*) FROM jobs WHERE account_id = $1

-- name: JobListByStatus
AND status IN ($1)

-- name: JobListByProject
AND project_id = $1

-- name: JobListByType
AND type = $1

-- name: JobListByTag
-- $1 is the account again: job_tags is keyed by account and tag.
AND id IN (SELECT job_id FROM job_tags WHERE account_id = $1 AND tag = $2)

-- name: JobListByClientRef
AND client_ref = $1

-- name: JobListSince
AND submitted_at >= $1

-- name: JobListByID
AND id IN ($1)

-- name: JobListOrder
-- Newest first; id breaks ties so that pages never overlap.
ORDER BY submitted_at DESC, id DESC

-- name: JobListPage
LIMIT $1 OFFSET $2

-- name: JobSetStatus
-- $9 is the list of statuses the job may be in (see the list placeholder
-- convention above). $6 sets started_at only if it is not set yet; $7 is the
-- finish time for a terminal status and NULL otherwise.
UPDATE jobs SET status = $2, error = COALESCE($3, error), recommended_action = COALESCE($4, recommended_action),
       summary = COALESCE($5, summary), started_at = COALESCE(started_at, $6), finished_at = $7,
       updated_at = $8
WHERE id = $1 AND status IN ($9)
RETURNING id, account_id, project_id, project_name, push_id, type, status, priority, request, payload,
          summary, error, recommended_action, client_ref, tags, meta, variant, task_count,
          submitted_at, started_at, finished_at, updated_at, rate_micros_per_hour, billing;

-- name: ProjectActiveJobCount
SELECT COUNT(*) FROM jobs WHERE project_id = $1 AND status IN ('planning', 'queued', 'running');

-- name: TaskList
SELECT id, job_id, idx, status, payload, meta, requirements, priority, retries_used, infra_requeues,
       declared_infra, attempts, result, output, error, latest_progress, exit_code, last_host_id,
       submitted_at, started_at, completed_at, updated_at, req_cpu, req_memory_mb, req_gpus, output_tail, checkpoint, resume_state
FROM tasks WHERE job_id = $1 ORDER BY idx;

-- name: TaskGet
SELECT id, job_id, idx, status, payload, meta, requirements, priority, retries_used, infra_requeues,
       declared_infra, attempts, result, output, error, latest_progress, exit_code, last_host_id,
       submitted_at, started_at, completed_at, updated_at, req_cpu, req_memory_mb, req_gpus, output_tail, checkpoint, resume_state
FROM tasks WHERE id = $1;

-- name: TaskExists
SELECT COUNT(*) FROM tasks WHERE id = $1;

-- name: TaskCountByStatus
SELECT status, COUNT(*) FROM tasks WHERE job_id = $1 GROUP BY status;

-- name: TaskClaim
-- Picks the first queued task in dispatch order (the partial index
-- tasks_dispatch) whose job is queued or running, and takes it.
-- SQLite: writes are serialised (one write connection, transactions begin
-- IMMEDIATE), so no other claim can run between this pick and this update,
-- and the caller's transaction holds the write lock until the attempt row is
-- in. PostgreSQL overrides this query to lock the pick (FOR UPDATE SKIP LOCKED).
-- $3-$5 are the host's free cpu, memory and gpus: the first task that fits is
-- taken. $6: a task this host ran last and that was requeued at or after $6
-- is left to other hosts (retries prefer a different host). $7: the least
-- GPUs a task must ask for (1 on a host enrolled for GPU work only).
-- $8-$10 are what the host is: its memory per GPU, the disk it lends a task
-- (0: no bound) and its single-core score. They are read from the task's
-- requirements JSON, which every task has, rather than from columns of
-- their own: the first queued task usually fits, so the claim reads one.
-- updated_at never goes back: a claimer whose clock reading was taken a
-- moment before a requeue committed elsewhere still stamps the claim (and
-- its attempt's assigned_at) no earlier than the requeue that ended the
-- previous attempt.
UPDATE tasks SET status = 'running', attempts = attempts + 1, last_host_id = $1,
       started_at = COALESCE(started_at, $2), updated_at = MAX($2, updated_at)
WHERE id = (
        SELECT t.id FROM tasks t JOIN jobs j ON j.id = t.job_id
        WHERE t.status = 'queued' AND j.status IN ('queued', 'running')
          AND t.req_cpu <= $3 AND t.req_memory_mb <= $4 AND t.req_gpus <= $5 AND t.req_gpus >= $7
          AND NOT (t.last_host_id = $1 AND t.updated_at >= $6)
          AND COALESCE(json_extract(t.requirements, '$.gpu_memory_mb'), 0) <= $8
          AND ($9 = 0 OR COALESCE(json_extract(t.requirements, '$.storage_gb'), 0) <= $9)
          AND COALESCE(json_extract(t.requirements, '$.min_single_core_score'), 0) <= $10
        ORDER BY t.priority, t.submitted_at, t.job_id, t.idx
        LIMIT 1)
  AND status = 'queued'
RETURNING id, job_id, idx, status, payload, meta, requirements, priority, retries_used, infra_requeues,
          declared_infra, attempts, result, output, error, latest_progress, exit_code, last_host_id,
          submitted_at, started_at, completed_at, updated_at, req_cpu, req_memory_mb, req_gpus, output_tail, checkpoint, resume_state;

-- name: AttemptCreate
-- Right after TaskClaim, in its transaction. $8-$10 are the claimed task's
-- cpu, memory and gpus as TaskClaim returned them; the rate is the job's,
-- read here. A requirements edit changes both the tasks and the job's rate
-- (tasks first, the lock order): on PostgreSQL it cannot have changed a task
-- this claim holds, and one that changed the task first holds its lock until
-- it commits, so TaskClaim skips the task until the new rate is visible.
INSERT INTO attempts (id, task_id, job_id, number, status, host_id, resource_profile, assigned_at, updated_at,
                      cpu, memory_mb, gpus, rate_micros_per_hour)
SELECT $1, $2, $3, $4, 'assigned', $5, $6, $7, $7, $8, $9, $10, j.rate_micros_per_hour
FROM jobs j WHERE j.id = $3
RETURNING id, task_id, job_id, number, status, host_id, resource_profile, exit_code, terminal_kind,
          retry_decision, assigned_at, started_at, ended_at, updated_at, billed_seconds, cost_micros,
          cpu, memory_mb, gpus, rate_micros_per_hour;

-- name: TaskSetProgress
UPDATE tasks SET latest_progress = COALESCE($2, latest_progress), output = COALESCE($3, output),
       output_tail = COALESCE($5, output_tail), checkpoint = COALESCE($6, checkpoint), updated_at = $4
WHERE id = $1 AND status = 'running';

-- name: TaskCancelOpen
-- Tasks before their attempts (see TaskFinishAttempt). On PostgreSQL this
-- also catches a claim racing the cancel: the update waits for the claimer's
-- lock on the task and then cancels it, and AttemptCancelOpen, a later
-- statement with a fresh snapshot, sees and cancels the claimer's attempt.
UPDATE tasks SET status = 'cancelled', completed_at = $2, updated_at = $2
WHERE job_id = $1 AND status IN ('queued', 'running');

-- name: AttemptCancelOpen
UPDATE attempts SET status = 'cancelled', terminal_kind = 'cancelled', retry_decision = 'none',
       ended_at = $2, updated_at = $2
WHERE job_id = $1 AND status IN ('assigned', 'running')
RETURNING id;

-- name: AttemptList
SELECT a.id, a.task_id, a.job_id, a.number, a.status, a.host_id, a.resource_profile, a.exit_code,
       a.terminal_kind, a.retry_decision, a.assigned_at, a.started_at, a.ended_at, a.updated_at, a.billed_seconds, a.cost_micros,
       a.cpu, a.memory_mb, a.gpus, a.rate_micros_per_hour
FROM attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.job_id = $1 ORDER BY t.idx, a.number;

-- name: AttemptListOpen
SELECT id, task_id, job_id, number, status, host_id, resource_profile, exit_code, terminal_kind,
       retry_decision, assigned_at, started_at, ended_at, updated_at, billed_seconds, cost_micros,
       cpu, memory_mb, gpus, rate_micros_per_hour
FROM attempts WHERE status IN ('assigned', 'running') ORDER BY assigned_at, id;

-- name: AttemptListOpenByHost
SELECT id, task_id, job_id, number, status, host_id, resource_profile, exit_code, terminal_kind,
       retry_decision, assigned_at, started_at, ended_at, updated_at, billed_seconds, cost_micros,
       cpu, memory_mb, gpus, rate_micros_per_hour
FROM attempts WHERE host_id = $1 AND status IN ('assigned', 'running') ORDER BY assigned_at, id;

-- name: AttemptGet
SELECT id, task_id, job_id, number, status, host_id, resource_profile, exit_code, terminal_kind,
       retry_decision, assigned_at, started_at, ended_at, updated_at, billed_seconds, cost_micros,
       cpu, memory_mb, gpus, rate_micros_per_hour
FROM attempts WHERE id = $1;

-- name: JobLock
-- SQLite serialises writers; the row is only read. PostgreSQL overrides it
-- with FOR UPDATE: the job's row lock for the rest of the transaction, so
-- that the ends of a job's last two tasks, finishing at once, are decided
-- one after the other and the second sees the first.
SELECT 1 FROM jobs WHERE id = $1;

-- name: AttemptExists
SELECT COUNT(*) FROM attempts WHERE id = $1;

-- name: AttemptStart
UPDATE attempts SET status = 'running', started_at = $2, updated_at = $2
WHERE id = $1 AND status = 'assigned';

-- name: TaskFinishAttempt
-- The first half of AttemptFinish: moves the running task of the open
-- attempt $1 on. It runs before AttemptFinish so that every write path takes
-- its row locks in one order, task then attempt (TaskCancelOpen does too),
-- and concurrent finishing and cancelling cannot deadlock on PostgreSQL.
-- $10 is the completion time for a terminal status and NULL for a requeue.
UPDATE tasks SET status = $2, retries_used = $3, infra_requeues = $4, declared_infra = $5,
       result = COALESCE($6, result), output = COALESCE($7, output), error = COALESCE($8, error),
       exit_code = COALESCE($9, exit_code), completed_at = $10, updated_at = $11,
       output_tail = COALESCE($12, output_tail), latest_progress = COALESCE($13, latest_progress),
       checkpoint = COALESCE($14, checkpoint)
WHERE id = (SELECT task_id FROM attempts WHERE id = $1 AND status IN ('assigned', 'running'))
  AND status = 'running';

-- name: AttemptFinish
UPDATE attempts SET status = $2, terminal_kind = $3, retry_decision = $4, exit_code = $5, ended_at = $6,
       updated_at = $6, billed_seconds = $7, cost_micros = $8
WHERE id = $1 AND status IN ('assigned', 'running')
RETURNING id, task_id, job_id, number, status, host_id, resource_profile, exit_code, terminal_kind,
          retry_decision, assigned_at, started_at, ended_at, updated_at, billed_seconds, cost_micros,
          cpu, memory_mb, gpus, rate_micros_per_hour;

-- name: JobEventCreate
-- $8 is the event's position where the engine numbers events as they are
-- inserted (JobEventPositionNext), NULL where its migration 015 numbers
-- them (PostgreSQL, at commit).
INSERT INTO job_events (id, job_id, task_id, attempt_id, kind, data, created_at, position)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: JobEventList
-- position is NULL only for the events of the reading transaction itself,
-- not yet committed (on PostgreSQL, see migration 015): they come last.
SELECT id, job_id, task_id, attempt_id, kind, data, created_at, position
FROM job_events WHERE job_id = $1 ORDER BY position IS NULL, position, created_at, id LIMIT $2;

-- name: JobEventPageOldest
-- Committed events only (position NOT NULL): a page never shows an event
-- whose place in the order is not final yet.
SELECT id, job_id, task_id, attempt_id, kind, data, created_at, position
FROM job_events WHERE job_id = $1 AND position > $2 AND position < $3
ORDER BY position LIMIT $4;

-- name: JobEventPageNewest
SELECT id, job_id, task_id, attempt_id, kind, data, created_at, position
FROM job_events WHERE job_id = $1 AND position > $2 AND position < $3
ORDER BY position DESC LIMIT $4;

-- name: JobEventFeedSelect
-- "position > $1" also leaves out uncommitted events (NULL position).
SELECT e.id, e.job_id, e.task_id, e.attempt_id, e.kind, e.data, e.created_at, e.position,
       j.account_id, j.project_id
FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE e.position > $1

-- name: JobEventFeedByJob
AND e.job_id IN ($1)

-- name: JobEventFeedByAccount
AND j.account_id = $1

-- name: JobEventFeedByProject
AND j.project_id = $1

-- name: JobEventFeedPage
ORDER BY e.position LIMIT $1

-- name: JobEventLastPosition
SELECT COALESCE(MAX(position), 0) FROM job_events;

-- name: TaskQueuedCount
SELECT COUNT(*) FROM tasks WHERE status = 'queued';

-- name: JobDepCreateBatch
-- Shared: $1 job_id. Per row: $2 depends_on.
INSERT INTO job_deps (job_id, depends_on) VALUES ($1, $2);

-- name: JobDependents
-- The planning jobs that wait on job $1.
SELECT d.job_id FROM job_deps d JOIN jobs j ON j.id = d.job_id
WHERE d.depends_on = $1 AND j.status = 'planning' ORDER BY d.job_id;

-- name: JobDependencyStatuses
-- The status of every job that job $1 depends on.
SELECT d.depends_on, j.status FROM job_deps d JOIN jobs j ON j.id = d.depends_on
WHERE d.job_id = $1 ORDER BY d.depends_on;

-- name: TaskSetResumeState
UPDATE tasks SET resume_state = $2 WHERE id = $1;

-- name: TaskOpenExists
-- Whether a job has a queued or running task left (tasks_job_status): the
-- end of each task asks it, so it must not count them all.
SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE job_id = $1 AND status IN ('queued', 'running') LIMIT 1) open;

-- GET /results?group_by: JobGroupsOpen, one JobGroupRowsBy* query with the
-- JobList* filter fragments after it, then JobGroupsClose. Each row query
-- yields one row per job and group key (a job per tag for the tag key) with
-- the job's metered cost; the wrapper counts and adds up per key and status.
-- name: JobGroupsOpen
SELECT k, status, COUNT(*), CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT), MIN(submitted_at), MAX(finished_at)
FROM (

-- name: JobGroupRowsByStatus
SELECT status AS k, status, submitted_at, finished_at,
       (SELECT COALESCE(SUM(a.cost_micros), 0) FROM attempts a WHERE a.job_id = jobs.id) AS cost_micros
FROM jobs WHERE account_id = $1

-- name: JobGroupRowsByProject
SELECT project_name AS k, status, submitted_at, finished_at,
       (SELECT COALESCE(SUM(a.cost_micros), 0) FROM attempts a WHERE a.job_id = jobs.id) AS cost_micros
FROM jobs WHERE account_id = $1

-- name: JobGroupRowsByType
SELECT type AS k, status, submitted_at, finished_at,
       (SELECT COALESCE(SUM(a.cost_micros), 0) FROM attempts a WHERE a.job_id = jobs.id) AS cost_micros
FROM jobs WHERE account_id = $1

-- name: JobGroupRowsByClientRef
SELECT client_ref AS k, status, submitted_at, finished_at,
       (SELECT COALESCE(SUM(a.cost_micros), 0) FROM attempts a WHERE a.job_id = jobs.id) AS cost_micros
FROM jobs WHERE account_id = $1

-- name: JobGroupRowsByTag
-- The join gives a job one row per tag (one with a NULL tag when it has
-- none); the filters that follow name only jobs' columns, so they stay
-- unambiguous (JobListByTag's subquery reads its own job_tags).
SELECT t.tag AS k, jobs.status, jobs.submitted_at, jobs.finished_at,
       (SELECT COALESCE(SUM(a.cost_micros), 0) FROM attempts a WHERE a.job_id = jobs.id) AS cost_micros
FROM jobs LEFT JOIN job_tags t ON t.job_id = jobs.id WHERE jobs.account_id = $1

-- name: JobGroupsClose
) g GROUP BY k, status
