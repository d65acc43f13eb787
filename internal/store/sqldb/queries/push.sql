-- name: PushCreate
INSERT INTO pushes (id, project_id, account_id, status, content_hash, size_bytes, tarball_diff,
                    file_index, manifest, context_dir, created_at, updated_at)
VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7, $8, $9, $10, $10)
RETURNING id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
          manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
          created_at, updated_at, started_at, finished_at;

-- name: PushGet
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE project_id = $1 AND id = $2;

-- name: PushLatest
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1;

-- name: PushLatestPublished
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE project_id = $1 AND status = 'published'
ORDER BY finished_at DESC, id DESC LIMIT 1;

-- name: PushActive
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE project_id = $1 AND status IN ('queued', 'building')
ORDER BY created_at DESC LIMIT 1;

-- name: PushList
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2;

-- name: PushListUnfinished
SELECT id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
       manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
       created_at, updated_at, started_at, finished_at
FROM pushes WHERE status IN ('queued', 'building') ORDER BY created_at, id;

-- name: PushCountUnfinished
SELECT COUNT(*) FROM pushes WHERE account_id = $1 AND status IN ('queued', 'building');

-- name: PushStart
UPDATE pushes SET status = 'building', attempts = attempts + 1, started_at = $2, updated_at = $2
WHERE id = $1 AND status = 'queued'
RETURNING id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
          manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
          created_at, updated_at, started_at, finished_at;

-- name: PushRequeue
UPDATE pushes SET status = 'queued', updated_at = $2 WHERE id = $1 AND status = 'building';

-- name: PushFinish
UPDATE pushes SET status = $2, image_ref = $3, image_digest = $4, error = $5, next_action = $6,
       log_tail = $7, finished_at = $8, updated_at = $8
WHERE id = $1 AND status IN ('queued', 'building')
RETURNING id, project_id, account_id, status, content_hash, size_bytes, tarball_diff, file_index,
          manifest, context_dir, image_ref, image_digest, error, next_action, log_tail, attempts,
          created_at, updated_at, started_at, finished_at;

-- name: PushSetLogTail
UPDATE pushes SET log_tail = $2, updated_at = $3 WHERE id = $1;
