-- name: WaitlistAdd
-- ON CONFLICT DO NOTHING returns no row for a repeat; the caller then reads
-- the stored one (WaitlistGetByEmail). Both engines accept this form.
INSERT INTO waitlist (id, email, created_at) VALUES ($1, $2, $3)
ON CONFLICT (email) DO NOTHING
RETURNING id, email, created_at;

-- name: WaitlistGetByEmail
SELECT id, email, created_at FROM waitlist WHERE email = $1;

-- name: WaitlistList
SELECT id, email, created_at FROM waitlist
ORDER BY created_at DESC, id DESC
LIMIT $1 OFFSET $2;

-- name: FeedbackCreate
INSERT INTO feedback (id, type, title, description, job_id, metadata, account_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, type, title, description, job_id, metadata, account_id, created_at;

-- name: FeedbackList
SELECT id, type, title, description, job_id, metadata, account_id, created_at FROM feedback
ORDER BY created_at DESC, id DESC
LIMIT $1 OFFSET $2;
