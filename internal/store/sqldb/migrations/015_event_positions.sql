-- Each engine overrides this file: job_events gets a position, a number
-- that grows in the order events become visible to readers, so that a
-- stream's cursor ("every event after position N") never skips an event
-- committed later with a smaller number (docs/streams.md). The engines get
-- there differently: SQLite has one writer, PostgreSQL serialises the
-- numbering at commit.
SELECT 1;
