-- A host's preparation of a project's published revision (the image unpacked
-- into a read-only root filesystem), one row per project and host.
CREATE TABLE runtime_preps (
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    host_id      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    image_digest TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('preparing', 'ready', 'failed', 'stale')),
    error        TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    ready_at     BIGINT,
    PRIMARY KEY (project_id, host_id)
);
