-- Artifacts and their references (store/artifact.go). Reference counts are
-- read with the artifact: a job is active while planning, queued or running.

-- name: ArtifactCreate
INSERT INTO artifacts (id, account_id, sha256, size_bytes, filename, source, url, job_id, task_id, kind, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- name: ArtifactGet
SELECT a.id, a.account_id, a.sha256, a.size_bytes, a.filename, a.source, a.url, a.job_id, a.task_id, a.kind,
       a.created_at, a.deleted_at,
       (SELECT COUNT(*) FROM artifact_refs r WHERE r.artifact_id = a.id),
       (SELECT COUNT(*) FROM artifact_refs r JOIN jobs j ON j.id = r.job_id
         WHERE r.artifact_id = a.id AND j.status IN ('planning', 'queued', 'running')),
       (SELECT MAX(r.created_at) FROM artifact_refs r WHERE r.artifact_id = a.id)
FROM artifacts a WHERE a.account_id = $1 AND a.id = $2 AND a.deleted_at IS NULL;

-- name: ArtifactList
SELECT a.id, a.account_id, a.sha256, a.size_bytes, a.filename, a.source, a.url, a.job_id, a.task_id, a.kind,
       a.created_at, a.deleted_at,
       (SELECT COUNT(*) FROM artifact_refs r WHERE r.artifact_id = a.id),
       (SELECT COUNT(*) FROM artifact_refs r JOIN jobs j ON j.id = r.job_id
         WHERE r.artifact_id = a.id AND j.status IN ('planning', 'queued', 'running')),
       (SELECT MAX(r.created_at) FROM artifact_refs r WHERE r.artifact_id = a.id)
FROM artifacts a WHERE a.account_id = $1 AND a.deleted_at IS NULL
ORDER BY a.created_at DESC, a.id DESC LIMIT $2 OFFSET $3;

-- name: ArtifactCount
SELECT COUNT(*) FROM artifacts WHERE account_id = $1 AND deleted_at IS NULL;

-- name: ArtifactQuotaUsed
-- Each content once: the same bytes uploaded twice are stored once.
SELECT COALESCE(SUM(size_bytes), 0) FROM (
    SELECT sha256, MAX(size_bytes) AS size_bytes FROM artifacts
    WHERE account_id = $1 AND deleted_at IS NULL AND source = 'local'
    GROUP BY sha256) c;

-- name: ArtifactContentCounted
SELECT COUNT(*) FROM artifacts
WHERE account_id = $1 AND sha256 = $2 AND deleted_at IS NULL AND source = 'local';

-- name: ArtifactRefAdd
INSERT INTO artifact_refs (artifact_id, job_id, role, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (artifact_id, job_id, role) DO NOTHING;

-- name: ArtifactHide
-- Guarded: only a visible artifact that no active job refers to.
UPDATE artifacts SET deleted_at = $3
WHERE account_id = $1 AND id = $2 AND deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM artifact_refs r JOIN jobs j ON j.id = r.job_id
                  WHERE r.artifact_id = artifacts.id AND j.status IN ('planning', 'queued', 'running'));

-- name: ArtifactListHiddenBefore
SELECT a.id, a.account_id, a.sha256, a.size_bytes, a.filename, a.source, a.url, a.job_id, a.task_id, a.kind,
       a.created_at, a.deleted_at, 0, 0, NULL
FROM artifacts a WHERE a.deleted_at IS NOT NULL AND a.deleted_at <= $1
ORDER BY a.deleted_at, a.id LIMIT $2;

-- name: ArtifactPurge
DELETE FROM artifacts WHERE id = $1 AND deleted_at IS NOT NULL;

-- name: ArtifactContentHeld
SELECT COUNT(*) FROM artifacts WHERE sha256 = $1;

-- name: ArtifactGetByID
SELECT a.id, a.account_id, a.sha256, a.size_bytes, a.filename, a.source, a.url, a.job_id, a.task_id, a.kind,
       a.created_at, a.deleted_at,
       (SELECT COUNT(*) FROM artifact_refs r WHERE r.artifact_id = a.id),
       (SELECT COUNT(*) FROM artifact_refs r JOIN jobs j ON j.id = r.job_id
         WHERE r.artifact_id = a.id AND j.status IN ('planning', 'queued', 'running')),
       (SELECT MAX(r.created_at) FROM artifact_refs r WHERE r.artifact_id = a.id)
FROM artifacts a WHERE a.id = $1 AND a.deleted_at IS NULL;

-- name: ArtifactRefExists
SELECT COUNT(*) FROM artifact_refs WHERE artifact_id = $1 AND job_id = $2 AND role = $3;

-- name: ArtifactListByJob
-- A job's produced artifacts, oldest first: the task views list them.
SELECT a.id, a.account_id, a.sha256, a.size_bytes, a.filename, a.source, a.url, a.job_id, a.task_id, a.kind,
       a.created_at, a.deleted_at, 0, 0, NULL
FROM artifacts a WHERE a.job_id = $1 AND a.deleted_at IS NULL
ORDER BY a.created_at, a.id;
