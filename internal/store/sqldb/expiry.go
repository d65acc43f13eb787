package sqldb

import (
	"context"
	"time"
)

func (q *queries) WalletChallengePurgeExpired(ctx context.Context, t time.Time, limit int) (int, error) {
	return q.purge(ctx, "WalletChallengePurgeExpired", t, limit)
}

func (q *queries) WalletSessionPurgeExpired(ctx context.Context, t time.Time, limit int) (int, error) {
	return q.purge(ctx, "WalletSessionPurgeExpired", t, limit)
}

func (q *queries) QuotePurgeExpired(ctx context.Context, t time.Time, limit int) (int, error) {
	return q.purge(ctx, "QuotePurgeExpired", t, limit)
}

// purge runs a batch delete of rows expired before t and says how many
// went.
func (q *queries) purge(ctx context.Context, name string, t time.Time, limit int) (int, error) {
	res, err := q.write.ExecContext(ctx, q.sql(name), micros(t), limit)
	if err != nil {
		return 0, q.mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
