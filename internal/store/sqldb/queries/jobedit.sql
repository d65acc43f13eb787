-- Job edits and list views of the API (store/jobedit.go).

-- name: TaskSetRequirements
-- Queued and running tasks only: an ended task keeps what it ran with.
-- updated_at is left alone (see store.TaskSetRequirementsParams).
UPDATE tasks SET requirements = $2, req_cpu = $3, req_memory_mb = $4, req_gpus = $5
WHERE job_id = $1 AND status IN ('queued', 'running');

-- name: JobSetRequest
-- After TaskSetRequirements in the same transaction (lock order: tasks, then
-- the job). Guarded: the job has not ended and nobody changed its request
-- since the caller read it ($3). $5, when not 0, is the job's new rate and
-- $6, when not NULL, its new billing (a re-priced edit).
UPDATE jobs SET request = $2, updated_at = $4,
       rate_micros_per_hour = CASE WHEN CAST($5 AS BIGINT) > 0 THEN CAST($5 AS BIGINT) ELSE rate_micros_per_hour END,
       billing = COALESCE($6, billing)
WHERE id = $1 AND request = $3 AND status IN ('planning', 'queued', 'running');

-- name: JobIDsWithOutput
-- $1 is a list placeholder (see queries/job.sql). tasks_job_status leads
-- with job_id, so each job's tasks are found by index.
SELECT DISTINCT job_id FROM tasks WHERE output <> '' AND job_id IN ($1);
