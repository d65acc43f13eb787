package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// A WAL checkpoint copies committed pages from the WAL back into the
// database file. SQLite runs one by default in the connection whose commit
// took the WAL past 1,000 pages, and here that connection is the one
// writer: every write queued behind it waited for the copy (about a tenth
// of an admission's CPU, docs/bench.md). The checkpointer runs them on a
// read connection instead, in PASSIVE mode, which neither waits for nor
// blocks the writer, so the copy overlaps the next transactions on the
// other core.
const (
	checkpointEvery = 100 * time.Millisecond
	// backstopCheckpointPages is the writer's own autocheckpoint: reached
	// only if the checkpointer falls far behind (a reader holding an old
	// snapshot keeps a passive checkpoint from finishing).
	backstopCheckpointPages = 8000
)

// startCheckpointer checkpoints db's WAL every checkpointEvery until the
// returned stop is called; stop waits for it to end.
func startCheckpointer(db *sql.DB) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// An error (a busy or closing database) is retried at
				// the next tick; the writer's backstop bounds the WAL.
				_, _ = db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
