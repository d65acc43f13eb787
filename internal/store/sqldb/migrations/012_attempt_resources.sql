-- Each attempt records what it was placed with and what it is metered at:
-- the task's resolved cpu, memory and gpus when it was claimed, and the
-- job's billed rate (micro-USD per hour) at that moment. A requirements
-- edit (PATCH /jobs/:id/requirements) changes the task and may re-price the
-- job; an attempt that was already placed keeps running with, and is billed
-- for, what it was claimed with.
ALTER TABLE attempts ADD COLUMN cpu DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (cpu >= 0);
ALTER TABLE attempts ADD COLUMN memory_mb BIGINT NOT NULL DEFAULT 0 CHECK (memory_mb >= 0);
ALTER TABLE attempts ADD COLUMN gpus BIGINT NOT NULL DEFAULT 0 CHECK (gpus >= 0);
ALTER TABLE attempts ADD COLUMN rate_micros_per_hour BIGINT NOT NULL DEFAULT 0 CHECK (rate_micros_per_hour >= 0);

-- Attempts claimed before this migration: until now a job's rate never
-- changed after admission, so the job's rate is the one each attempt ran
-- at. Their task's requirements are the best record of their resources (an
-- edit could only have changed them at the same price).
UPDATE attempts SET
    cpu = COALESCE((SELECT t.req_cpu FROM tasks t WHERE t.id = attempts.task_id), 0),
    memory_mb = COALESCE((SELECT t.req_memory_mb FROM tasks t WHERE t.id = attempts.task_id), 0),
    gpus = COALESCE((SELECT t.req_gpus FROM tasks t WHERE t.id = attempts.task_id), 0),
    rate_micros_per_hour = COALESCE((SELECT j.rate_micros_per_hour FROM jobs j WHERE j.id = attempts.job_id), 0);
