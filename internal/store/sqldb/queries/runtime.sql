-- name: RuntimePrepPut
INSERT INTO runtime_preps (project_id, host_id, content_hash, image_digest, status, error, created_at, updated_at, ready_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $7, CASE WHEN CAST($5 AS TEXT) = 'ready' THEN CAST($7 AS BIGINT) ELSE NULL END)
ON CONFLICT (project_id, host_id) DO UPDATE SET
    content_hash = excluded.content_hash, image_digest = excluded.image_digest, status = excluded.status,
    error = excluded.error, updated_at = excluded.updated_at,
    ready_at = COALESCE(excluded.ready_at, runtime_preps.ready_at)
RETURNING project_id, host_id, content_hash, image_digest, status, error, created_at, updated_at, ready_at;

-- name: RuntimePrepList
SELECT project_id, host_id, content_hash, image_digest, status, error, created_at, updated_at, ready_at
FROM runtime_preps WHERE project_id = $1 ORDER BY host_id;

-- name: RuntimePrepMarkStale
UPDATE runtime_preps SET status = 'stale', updated_at = $2 WHERE project_id = $1 AND status <> 'stale';
