package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventChannel is the channel migration 015's trigger notifies when job
// events commit, on any controller.
const EventChannel = "skiff_job_events"

// PushChannel is the channel migration 019's trigger notifies when a push
// is recorded, on any controller.
const PushChannel = "skiff_pushes"

// Listen calls wake on every notification of channel on the database at
// url until ctx ends, on a connection of its own. It reconnects after a
// failure (calling wake once connected again, since notifications sent
// meanwhile are lost) and returns only when ctx ends.
func Listen(ctx context.Context, url, channel string, wake func(), log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, url, channel, wake)
		if ctx.Err() != nil {
			return
		}
		log.Warn("postgres listen", "channel", channel, "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, url, channel string, wake func()) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}
