-- Cache mounts (manifest cache_mounts) live on hosts, one directory per
-- project and cache name. POST /projects/:name/invalidate wipes them by
-- moving the project to a new epoch: hosts mount <project>/<epoch>/<name>
-- and remove the directories of older epochs that no task holds.
ALTER TABLE projects ADD COLUMN cache_epoch BIGINT NOT NULL DEFAULT 0;
