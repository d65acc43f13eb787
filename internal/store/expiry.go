package store

import (
	"context"
	"time"
)

// ExpiredQuoteRetention is how long an unpaid quote is kept after it
// expired, so that an account's quote list still shows it as expired for
// a day; then the sweeper deletes it.
const ExpiredQuoteRetention = 24 * time.Hour

// ExpiryStore deletes what strangers can create for free and that is worth
// nothing once expired: wallet challenges, wallet sessions and unpaid
// quotes. Each call deletes at most limit rows, oldest first, and returns
// how many it deleted, so that a sweep of a large backlog holds no lock
// for long.
type ExpiryStore interface {
	// WalletChallengePurgeExpired deletes challenges (used or not) that
	// expired before t.
	WalletChallengePurgeExpired(ctx context.Context, t time.Time, limit int) (int, error)
	// WalletSessionPurgeExpired deletes sessions that expired before t.
	WalletSessionPurgeExpired(ctx context.Context, t time.Time, limit int) (int, error)
	// QuotePurgeExpired deletes quotes that were never paid (open, expired
	// or cancelled), expired before t and have no settlement at all (a
	// settlement, even a failed one, keeps its quote).
	QuotePurgeExpired(ctx context.Context, t time.Time, limit int) (int, error)
}
