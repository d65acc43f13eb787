-- Issue 28 (the server's edges): what strangers create for free is purged
-- once expired (wallet challenges, sessions, unpaid quotes), so the
-- indexes below keep each sweep batch an index range scan; and a
-- settlement records when it was first sent to the facilitator, because
-- only such a settlement may be looked up on the chain.
ALTER TABLE payment_settlements ADD COLUMN sent_at BIGINT;
CREATE INDEX wallet_challenges_expires ON wallet_challenges (expires_at);
CREATE INDEX wallet_sessions_expires ON wallet_sessions (expires_at);
CREATE INDEX quotes_unpaid_expires ON quotes (expires_at) WHERE status IN ('open', 'expired', 'cancelled');
