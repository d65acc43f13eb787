-- name: JobPurgeFinishedBefore
-- Terminal jobs only (finished_at is set exactly for them, a CHECK says
-- so); tasks, attempts, events, tags, dependencies and artifact references
-- go by ON DELETE CASCADE. Ledger entries and holds keep the job id as
-- text: money history outlives the job.
DELETE FROM jobs WHERE id IN (
    SELECT id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < $1
    ORDER BY finished_at, id LIMIT $2);
