-- Checkpointing (spec 2.5, 2.10 rule 7): the latest checkpoint a task's
-- runner reported (a SKIFF_PROGRESS object's "checkpoint"), kept across its
-- attempts, and the state the current attempt was resumed from.
ALTER TABLE tasks ADD COLUMN checkpoint TEXT;
ALTER TABLE tasks ADD COLUMN resume_state TEXT;
