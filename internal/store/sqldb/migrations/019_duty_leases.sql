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
