-- At most one queued or building push per project, enforced by the database
-- so that two concurrent pushes cannot both pass the "no active push" check.
CREATE UNIQUE INDEX pushes_one_active ON pushes (project_id) WHERE status IN ('queued', 'building');
