-- name: JobEventPositionNext
-- SQLite numbers events as they are inserted (one writer: insert order is
-- commit order; migration 015). Taking the number first and inserting it
-- with the event (JobEventCreate's $8) spares the event row the second
-- write that migration 015's trigger makes when the position is NULL, with
-- its two position indexes: about a third of an event's cost, and a task
-- writes three events on its way through dispatch.
UPDATE job_event_counter SET last = last + 1 RETURNING last;
