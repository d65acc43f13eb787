-- name: KVList
-- PostgreSQL compares text with the database collation, which may not be
-- byte order; COLLATE "C" makes the prefix range and the ordering match
-- SQLite's binary comparison.
SELECT project_id, key, value, ttl_s, expires_at, created_at, updated_at
FROM project_kv
WHERE project_id = $1 AND key COLLATE "C" >= $2 AND key COLLATE "C" < $3
  AND (expires_at IS NULL OR expires_at > $4)
ORDER BY key COLLATE "C"
LIMIT $5;
