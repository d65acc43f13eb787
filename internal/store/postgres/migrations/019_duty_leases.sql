-- Leases in a table: how several controllers on one database agree who runs
-- a singleton duty (the build queue, the sweeps) and which hosts are alive
-- (docs/scaling.md). A lease is held by holder until expires_at (unix
-- micros, the holder's clock); epoch counts how often it changed hands, so
-- a log can tell two tenures apart.
CREATE TABLE duty_leases (
    name        TEXT PRIMARY KEY CHECK (name <> ''),
    holder      TEXT NOT NULL CHECK (holder <> ''),
    epoch       BIGINT NOT NULL,
    acquired_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);

-- PostgreSQL only: a new push wakes the build queue on whichever controller
-- holds the build duty (postgres.PushChannel), not only on the one that
-- accepted it. The notification is sent when the transaction commits.
CREATE FUNCTION pushes_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('skiff_pushes', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER pushes_notify AFTER INSERT ON pushes
    FOR EACH STATEMENT EXECUTE FUNCTION pushes_notify();
