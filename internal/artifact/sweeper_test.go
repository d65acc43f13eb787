package artifact_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skiffhq/skiff/internal/artifact"
)

// A backlog is taken in batches, repeated while full batches come back, and
// the next round comes after the interval.
func TestSweeperBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		backlog, calls := 250, 0
		task := artifact.SweepTask{Name: "test", Run: func(ctx context.Context, batch int) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			n := min(batch, backlog)
			backlog -= n
			return n, nil
		}}
		ctx, cancel := context.WithCancel(t.Context())
		s := &artifact.Sweeper{Tasks: []artifact.SweepTask{task}, Interval: time.Hour, Batch: 100}
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		synctest.Wait()
		mu.Lock()
		if backlog != 0 || calls != 3 {
			t.Errorf("first round: got backlog %d after %d batches, want 0 after 3", backlog, calls)
		}
		backlog = 5
		mu.Unlock()
		time.Sleep(time.Hour - time.Second)
		synctest.Wait()
		mu.Lock()
		if backlog != 5 {
			t.Errorf("before the interval: got backlog %d, want 5 untouched", backlog)
		}
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if backlog != 0 || calls != 4 {
			t.Errorf("second round: got backlog %d after %d calls, want 0 after 4", backlog, calls)
		}
		mu.Unlock()
		cancel()
		<-done
	})
}
