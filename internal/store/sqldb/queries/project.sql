-- name: ProjectCreate
INSERT INTO projects (id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind,
                      image_ref, image_digest, manifest, cache_policy, runtime_version,
                      created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
RETURNING id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind, image_ref,
          image_digest, manifest, cache_policy, runtime_version, content_hash, created_at, updated_at;

-- name: ProjectGetByName
SELECT id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind, image_ref,
       image_digest, manifest, cache_policy, runtime_version, content_hash, created_at, updated_at
FROM projects WHERE account_id = $1 AND name = $2;

-- name: ProjectGetByID
SELECT id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind, image_ref,
       image_digest, manifest, cache_policy, runtime_version, content_hash, created_at, updated_at
FROM projects WHERE id = $1;

-- name: ProjectList
SELECT id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind, image_ref,
       image_digest, manifest, cache_policy, runtime_version, content_hash, created_at, updated_at
FROM projects WHERE account_id = $1 ORDER BY name;

-- name: ProjectUpdate
UPDATE projects SET remote_dir = $2, env = $3, setup_timeout_s = $4, runtime_kind = $5,
       image_ref = $6, image_digest = $7, manifest = $8, cache_policy = $9, runtime_version = $10,
       updated_at = $11
WHERE id = $1
RETURNING id, account_id, name, remote_dir, env, setup_timeout_s, runtime_kind, image_ref,
          image_digest, manifest, cache_policy, runtime_version, content_hash, created_at, updated_at;

-- name: ProjectSetContentHash
UPDATE projects SET content_hash = $2, updated_at = $3 WHERE id = $1;

-- name: ProjectDelete
DELETE FROM projects WHERE id = $1;

-- name: KVPut
INSERT INTO project_kv (project_id, key, value, ttl_s, expires_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $6)
ON CONFLICT (project_id, key) DO UPDATE SET
    value = excluded.value, ttl_s = excluded.ttl_s, expires_at = excluded.expires_at,
    updated_at = excluded.updated_at,
    -- an expired entry that is overwritten starts a new life
    created_at = CASE WHEN project_kv.expires_at IS NOT NULL AND project_kv.expires_at <= excluded.updated_at
                      THEN excluded.created_at ELSE project_kv.created_at END
RETURNING project_id, key, value, ttl_s, expires_at, created_at, updated_at;

-- name: KVGet
SELECT project_id, key, value, ttl_s, expires_at, created_at, updated_at
FROM project_kv
WHERE project_id = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3);

-- name: KVList
-- The prefix match is a range, not LIKE, so keys may hold % and _ freely:
-- every key starting with $2 sorts at or after $2 and before $2 || U+10FFFF.
SELECT project_id, key, value, ttl_s, expires_at, created_at, updated_at
FROM project_kv
WHERE project_id = $1 AND key >= $2 AND key < $3 AND (expires_at IS NULL OR expires_at > $4)
ORDER BY key
LIMIT $5;

-- name: KVDelete
DELETE FROM project_kv
WHERE project_id = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3);

-- name: KVAccountUsage
-- octet_length counts bytes in both engines (length counts characters), and
-- reads the size without loading the value: SQLite from the record header,
-- PostgreSQL from the TOAST header.
SELECT COUNT(*), COALESCE(SUM(octet_length(kv.value)), 0)
FROM project_kv kv JOIN projects p ON p.id = kv.project_id
WHERE p.account_id = $1 AND (kv.expires_at IS NULL OR kv.expires_at > $2);

-- name: KVDeleteExpired
DELETE FROM project_kv WHERE expires_at IS NOT NULL AND expires_at <= $1;

-- name: ProjectCacheEpoch
SELECT cache_epoch FROM projects WHERE id = $1;

-- name: ProjectBumpCacheEpoch
UPDATE projects SET cache_epoch = cache_epoch + 1, updated_at = $2 WHERE id = $1 RETURNING cache_epoch;
