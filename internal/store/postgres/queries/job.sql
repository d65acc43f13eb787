-- name: TaskClaim
-- PostgreSQL runs claims concurrently, so the pick locks the task it takes:
-- FOR UPDATE SKIP LOCKED makes a concurrent claimer pass over a task another
-- transaction holds instead of waiting for it (and then finding it taken),
-- and a task that stopped being queued since this statement's snapshot fails
-- the re-check on the locked row and the scan goes on to the next one. Only
-- the task row is locked (OF t): the job is read, not held. Otherwise as the
-- common query.
-- Plan: with statistics, an ordered scan of tasks_dispatch that stops at the
-- first dispatchable task (about 1 ms a claim with 10,000 queued). Before the
-- tasks table is first analyzed (autovacuum does so within about a minute of
-- it filling), the planner guesses it tiny and sorts the queued tasks of the
-- dispatchable jobs instead: 5-15 ms a claim with 10,000 queued.
UPDATE tasks SET status = 'running', attempts = attempts + 1, last_host_id = $1,
       started_at = COALESCE(started_at, $2), updated_at = GREATEST($2, updated_at)
WHERE id = (
        SELECT t.id FROM tasks t JOIN jobs j ON j.id = t.job_id
        WHERE t.status = 'queued' AND j.status IN ('queued', 'running')
          AND t.req_cpu <= $3 AND t.req_memory_mb <= $4 AND t.req_gpus <= $5 AND t.req_gpus >= $7
          AND NOT (t.last_host_id = $1 AND t.updated_at >= $6)
          AND COALESCE((t.requirements::jsonb ->> 'gpu_memory_mb')::bigint, 0) <= $8::bigint
          AND ($9::bigint = 0 OR COALESCE((t.requirements::jsonb ->> 'storage_gb')::bigint, 0) <= $9::bigint)
          AND COALESCE((t.requirements::jsonb ->> 'min_single_core_score')::double precision, 0) <= $10::double precision
        ORDER BY t.priority, t.submitted_at, t.job_id, t.idx
        LIMIT 1
        FOR UPDATE OF t SKIP LOCKED)
RETURNING id, job_id, idx, status, payload, meta, requirements, priority, retries_used, infra_requeues,
          declared_infra, attempts, result, output, error, latest_progress, exit_code, last_host_id,
          submitted_at, started_at, completed_at, updated_at, req_cpu, req_memory_mb, req_gpus, output_tail, checkpoint, resume_state;

-- name: AccountLock
-- Locks the account row until the transaction ends: changes to one balance
-- queue here and at HoldReserve (store.BillingStore.AccountLock). NO KEY
-- UPDATE, the lock HoldReserve takes: it does not wait for
-- the KEY SHARE that an admission's inserts (a job's foreign key) take on
-- the account before it reserves, so that such an admission and a holder
-- of this lock cannot deadlock.
SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE;

-- name: JobLock
-- Locks the job row until the transaction ends (store.JobStore.JobLock),
-- without writing it. NO KEY: the lock an UPDATE of the row would take, so
-- that inserts of the job's events, tasks and attempts elsewhere (their
-- foreign keys take KEY SHARE) are not held up by it.
SELECT 1 FROM jobs WHERE id = $1 FOR NO KEY UPDATE;

-- name: TaskCheckpointCounts
-- The common query with PostgreSQL's JSON operator: a checkpoint that is
-- not an object (a number, a list) has no publish_status.
SELECT COUNT(checkpoint), COUNT(resume_state),
       COALESCE(SUM(CASE WHEN checkpoint::jsonb ->> 'publish_status' = 'pending' THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN checkpoint::jsonb ->> 'publish_status' = 'published' THEN 1 ELSE 0 END), 0),
       COALESCE(SUM(CASE WHEN checkpoint::jsonb ->> 'publish_status' = 'failed' THEN 1 ELSE 0 END), 0)
FROM tasks WHERE job_id = $1;

-- name: HoldReserve
-- The common query's reservation in one statement that is safe with
-- concurrent writers: the locking read takes the account row's lock (NO
-- KEY UPDATE: inserts elsewhere that reference the account, taking KEY
-- SHARE, pass) and, where another transaction held it, reads the row's
-- newest version once it is free (READ COMMITTED), so the check sees every
-- hold committed before it. The insert's trigger then adds the hold to
-- held_micros. (A plain read would not wait: the conformance test
-- HoldReserveConcurrent overdraws without the lock.) The lock is held
-- from here to the commit: callers reserve last. Returns the balance
-- available before the hold and the hold's id, NULL when it is short.
WITH acc AS (
    SELECT ledger_micros - held_micros AS avail FROM accounts WHERE id = $2 FOR NO KEY UPDATE
), hold AS (
    INSERT INTO holds (id, account_id, job_id, status, amount_micros, captured_micros, created_at, updated_at)
    SELECT $1, $2, $3, 'active', $4, 0, $5, $5 FROM acc WHERE acc.avail >= $4
    RETURNING id
)
SELECT acc.avail, hold.id FROM acc LEFT JOIN hold ON true;
