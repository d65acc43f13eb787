-- Paged reads of a job's tasks (store/taskpage.go).

-- name: TaskListPage
-- The (job_id, idx) unique index walks the job's tasks in order; the rows
-- skipped by OFFSET are not read out.
SELECT id, job_id, idx, status, payload, meta, requirements, priority, retries_used, infra_requeues,
       declared_infra, attempts, result, output, error, latest_progress, exit_code, last_host_id,
       submitted_at, started_at, completed_at, updated_at, req_cpu, req_memory_mb, req_gpus, output_tail, checkpoint, resume_state
FROM tasks WHERE job_id = $1 ORDER BY idx LIMIT $2 OFFSET $3;

-- name: AttemptListForTasks
-- The page's tasks by (job_id, idx), then each task's attempts by
-- (task_id, number).
SELECT a.id, a.task_id, a.job_id, a.number, a.status, a.host_id, a.resource_profile, a.exit_code,
       a.terminal_kind, a.retry_decision, a.assigned_at, a.started_at, a.ended_at, a.updated_at, a.billed_seconds, a.cost_micros,
       a.cpu, a.memory_mb, a.gpus, a.rate_micros_per_hour
FROM tasks t JOIN attempts a ON a.task_id = t.id
WHERE t.job_id = $1 AND t.idx >= $2 AND t.idx <= $3
ORDER BY t.idx, a.number;

-- name: TaskResultCounts
-- One pass over the job's tasks (tasks_job_status leads with job_id); only
-- the two counts come back.
SELECT COALESCE(SUM(CASE WHEN result IS NOT NULL AND TRIM(result) NOT IN ('', 'null') THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN output <> '' THEN 1 ELSE 0 END), 0)
FROM tasks WHERE job_id = $1;

-- name: TaskCheckpointCounts
-- One pass over the job's tasks, like TaskResultCounts. publish_status is
-- a top-level key of a checkpoint object that only the service writes
-- (job/checkpoint.go). SQLite's json_extract; PostgreSQL overrides it.
SELECT COUNT(checkpoint), COUNT(resume_state),
       COALESCE(SUM(CASE WHEN json_extract(checkpoint, '$.publish_status') = 'pending' THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN json_extract(checkpoint, '$.publish_status') = 'published' THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN json_extract(checkpoint, '$.publish_status') = 'failed' THEN 1 ELSE 0 END), 0)
FROM tasks WHERE job_id = $1;
