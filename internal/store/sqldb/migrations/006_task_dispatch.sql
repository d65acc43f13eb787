-- What the dispatcher needs to place a task, and what a running task shows.
--
-- req_cpu, req_memory_mb and req_gpus are the task's resolved requirements
-- (the JSON column keeps them as the caller sees them), as columns so that a
-- claim can pick the first queued task that fits a host's free capacity.
-- output_tail is the last ~1000 bytes of the running attempt's stdout and
-- stderr (live_feedback.output_tail); it is kept after the attempt ends so a
-- retry shows the failed attempt's tail until the new one writes its own.
ALTER TABLE tasks ADD COLUMN req_cpu DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN req_memory_mb BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN req_gpus BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN output_tail TEXT NOT NULL DEFAULT '';
