-- PostgreSQL: transactions commit concurrently, so a number drawn at insert
-- can become visible after a larger one (a reader past the larger one would
-- skip it). The position is drawn instead by a deferred trigger, at commit,
-- under a transaction-scoped advisory lock: the lock is the last one any
-- transaction takes (deferred triggers run after every statement) and is
-- released only once the commit is visible, so positions become visible in
-- increasing order. Until its commit an event's position is NULL, and
-- readers of positions see only committed events. The trigger also
-- notifies channel skiff_job_events, delivered on commit: the wake-up of
-- every controller's streams (the rows stay the truth).
ALTER TABLE job_events ADD COLUMN position BIGINT;

UPDATE job_events SET position = o.n
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) AS n FROM job_events) AS o
WHERE o.id = job_events.id;

CREATE SEQUENCE job_event_positions;
SELECT setval('job_event_positions', COALESCE((SELECT MAX(position) FROM job_events), 0) + 1, false);

CREATE UNIQUE INDEX job_events_position ON job_events (position);
CREATE INDEX job_events_job_position ON job_events (job_id, position);

CREATE FUNCTION job_events_position() RETURNS trigger AS $$
BEGIN
    -- 0x736b6966 ("skif") << 8 | 1: the event numbering lock.
    PERFORM pg_advisory_xact_lock(495723308545);
    UPDATE job_events SET position = nextval('job_event_positions') WHERE id = NEW.id;
    PERFORM pg_notify('skiff_job_events', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE CONSTRAINT TRIGGER job_events_position AFTER INSERT ON job_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION job_events_position();
