-- name: ImageDigestsInUse
-- What refers to an image now: each project's published revision (its
-- newest published push, as PushLatestPublished), the revision of every
-- planning, queued or running job (through jobs_project_status), and the
-- revision of every open attempt (through the partial attempts_open_host:
-- a cancelled job's attempt may still be running).
SELECT pu.image_digest FROM pushes pu
WHERE pu.status = 'published' AND pu.image_digest <> '' AND NOT EXISTS (
    SELECT 1 FROM pushes n WHERE n.project_id = pu.project_id AND n.status = 'published'
      AND (n.finished_at > pu.finished_at OR (n.finished_at = pu.finished_at AND n.id > pu.id)))
UNION
SELECT pu.image_digest FROM projects p
JOIN jobs j ON j.project_id = p.id AND j.status IN ('planning', 'queued', 'running')
JOIN pushes pu ON pu.id = j.push_id
WHERE pu.image_digest <> ''
UNION
SELECT pu.image_digest FROM attempts a
JOIN jobs j ON j.id = a.job_id
JOIN pushes pu ON pu.id = j.push_id
WHERE a.status IN ('assigned', 'running') AND pu.image_digest <> '';

-- name: ImageReferenced
-- Something refers to the image at $2: later than what the row says.
INSERT INTO images (digest, referenced_at) VALUES ($1, $2)
ON CONFLICT (digest) DO UPDATE SET referenced_at = excluded.referenced_at
WHERE images.referenced_at < excluded.referenced_at;

-- name: ImageFound
-- An image found on disk: its grace starts at $2 unless it is known.
INSERT INTO images (digest, referenced_at) VALUES ($1, $2)
ON CONFLICT (digest) DO NOTHING;

-- name: ImageList
SELECT digest, referenced_at FROM images ORDER BY referenced_at, digest;

-- name: ImageForget
-- Only while it is still unreferenced since before $2: a sweep or a
-- publish that saw it in use meanwhile keeps it.
DELETE FROM images WHERE digest = $1 AND referenced_at < $2;
