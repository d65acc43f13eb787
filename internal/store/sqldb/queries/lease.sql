-- name: LeaseAcquire
-- Takes the lease when it is free, expired or already the holder's (then it
-- is extended and keeps its epoch); a live lease of another holder is left
-- alone and no row comes back. Both engines accept the upsert with WHERE.
INSERT INTO duty_leases (name, holder, epoch, acquired_at, expires_at) VALUES ($1, $2, 1, $3, $4)
ON CONFLICT (name) DO UPDATE SET
    holder = excluded.holder,
    epoch = CASE WHEN duty_leases.holder = excluded.holder THEN duty_leases.epoch ELSE duty_leases.epoch + 1 END,
    acquired_at = CASE WHEN duty_leases.holder = excluded.holder THEN duty_leases.acquired_at ELSE excluded.acquired_at END,
    expires_at = excluded.expires_at
WHERE duty_leases.holder = excluded.holder OR duty_leases.expires_at <= excluded.acquired_at
RETURNING name, holder, epoch, acquired_at, expires_at;

-- name: LeaseForce
-- Takes the lease whoever holds it: host presence, where the controller a
-- host talks to now is the one that knows it is alive.
INSERT INTO duty_leases (name, holder, epoch, acquired_at, expires_at) VALUES ($1, $2, 1, $3, $4)
ON CONFLICT (name) DO UPDATE SET
    holder = excluded.holder,
    epoch = CASE WHEN duty_leases.holder = excluded.holder THEN duty_leases.epoch ELSE duty_leases.epoch + 1 END,
    acquired_at = CASE WHEN duty_leases.holder = excluded.holder THEN duty_leases.acquired_at ELSE excluded.acquired_at END,
    expires_at = excluded.expires_at
RETURNING name, holder, epoch, acquired_at, expires_at;

-- name: LeaseRenew
-- Extends the holder's lease, only while it is still live: a lease that
-- expired may already be another controller's, and a holder that could not
-- renew in time must stop rather than extend it.
UPDATE duty_leases SET expires_at = $4
WHERE name = $1 AND holder = $2 AND expires_at > $3
RETURNING name, holder, epoch, acquired_at, expires_at;

-- name: LeaseRelease
-- Ends the holder's lease now, so another controller takes it at its next
-- try instead of after the expiry.
UPDATE duty_leases SET expires_at = 0 WHERE name = $1 AND holder = $2;

-- name: LeaseList
-- Leases, live or expired, whose name starts with $1. The table is small
-- (one row per duty and per host), so the prefix is compared, not indexed,
-- the same way on both engines whatever their collation.
SELECT name, holder, epoch, acquired_at, expires_at FROM duty_leases
WHERE substr(name, 1, length($1)) = $1
ORDER BY name;
