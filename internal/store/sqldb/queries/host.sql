-- name: EnrollmentCreate
INSERT INTO host_enrollments (code_hash, name, work_kinds, rate_percent, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING code_hash, name, work_kinds, rate_percent, created_at, expires_at, used_at, host_id;

-- name: EnrollmentGet
SELECT code_hash, name, work_kinds, rate_percent, created_at, expires_at, used_at, host_id
FROM host_enrollments WHERE code_hash = $1;

-- name: EnrollmentUse
-- Guarded: only an unused code is marked, so of two concurrent redeems one wins.
UPDATE host_enrollments SET used_at = $3, host_id = $2 WHERE code_hash = $1 AND used_at = 0;

-- name: HostCreate
INSERT INTO hosts (id, name, state, work_kinds, rate_percent, cpus, memory_mb, gpus, hostname, profile,
    credential_hash, created_at)
VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING id, name, state, work_kinds, rate_percent, cpus, memory_mb, gpus, hostname, profile,
    credential_hash, created_at, last_seen_at;

-- name: HostGet
SELECT id, name, state, work_kinds, rate_percent, cpus, memory_mb, gpus, hostname, profile,
    credential_hash, created_at, last_seen_at
FROM hosts WHERE id = $1;

-- name: HostGetByCredential
SELECT id, name, state, work_kinds, rate_percent, cpus, memory_mb, gpus, hostname, profile,
    credential_hash, created_at, last_seen_at
FROM hosts WHERE credential_hash = $1;

-- name: HostList
SELECT id, name, state, work_kinds, rate_percent, cpus, memory_mb, gpus, hostname, profile,
    credential_hash, created_at, last_seen_at
FROM hosts ORDER BY created_at, id LIMIT $1 OFFSET $2;

-- name: HostSetState
UPDATE hosts SET state = $2 WHERE id = $1 AND state = $3;

-- name: HostSeen
-- Never moves backwards: two controllers may record the same host.
UPDATE hosts SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2;
