-- SQLite: one writer, so numbering at insert is numbering in commit order.
-- The counter lives in its own row rather than MAX(position) + 1, so that a
-- deleted job's events never hand their numbers out again (a client's cursor
-- past them would skip the new ones).
ALTER TABLE job_events ADD COLUMN position BIGINT;

UPDATE job_events SET position = o.n
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) AS n FROM job_events) AS o
WHERE o.id = job_events.id;

CREATE TABLE job_event_counter (last BIGINT NOT NULL);
INSERT INTO job_event_counter (last) SELECT COALESCE(MAX(position), 0) FROM job_events;

CREATE UNIQUE INDEX job_events_position ON job_events (position);
CREATE INDEX job_events_job_position ON job_events (job_id, position);

CREATE TRIGGER job_events_position AFTER INSERT ON job_events WHEN NEW.position IS NULL
BEGIN
    UPDATE job_event_counter SET last = last + 1;
    UPDATE job_events SET position = (SELECT last FROM job_event_counter) WHERE rowid = NEW.rowid;
END;
