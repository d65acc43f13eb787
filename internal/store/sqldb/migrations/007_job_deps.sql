-- depends_on (spec 4.5, 3.1): one row per dependency of a job, so that a
-- job's end finds the planning jobs waiting on it with one indexed lookup.
-- depends_on has no foreign key: a dependency is an existing job of the same
-- account when the row is written, and rows go with the dependent job.
CREATE TABLE job_deps (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    depends_on TEXT NOT NULL,
    PRIMARY KEY (job_id, depends_on)
);
CREATE INDEX job_deps_depends_on ON job_deps (depends_on, job_id);
