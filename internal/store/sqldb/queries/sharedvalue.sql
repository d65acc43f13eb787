-- name: SharedValuePut
-- Stores the value unless a newer one is there already. Both engines accept
-- the upsert with WHERE.
INSERT INTO shared_values (name, value, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
WHERE shared_values.updated_at <= excluded.updated_at;

-- name: SharedValueGet
SELECT name, value, updated_at FROM shared_values WHERE name = $1;
