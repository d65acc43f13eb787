package artifact

import (
	"context"
	"log/slog"
	"time"
)

// SweepTask is one kind of background deletion, done in batches: it removes
// at most batch items and says how many it removed.
type SweepTask struct {
	Name string
	Run  func(ctx context.Context, batch int) (int, error)
}

// Sweeper runs its tasks every Interval. Each task runs in small batches
// (one short transaction or a few statements each), repeating while a full
// batch came back, so a large backlog never holds a lock for long and the
// API keeps answering between batches.
type Sweeper struct {
	Tasks    []SweepTask
	Interval time.Duration // default 1 minute
	Batch    int           // default 100
	// MaxBatchesPerRound bounds one round, so one task cannot starve the
	// others; default 50.
	MaxBatchesPerRound int
	Logger             *slog.Logger
}

// Run sweeps until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	interval, batch, rounds := s.Interval, s.Batch, s.MaxBatchesPerRound
	if interval <= 0 {
		interval = time.Minute
	}
	if batch <= 0 {
		batch = 100
	}
	if rounds <= 0 {
		rounds = 50
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.Once(ctx, batch, rounds, log)
		t.Reset(interval)
	}
}

// Once runs one round of every task.
func (s *Sweeper) Once(ctx context.Context, batch, maxBatches int, log *slog.Logger) {
	for _, task := range s.Tasks {
		total := 0
		for range maxBatches {
			n, err := task.Run(ctx, batch)
			total += n
			if err != nil {
				if ctx.Err() == nil {
					log.Error("sweep failed", "task", task.Name, "err", err)
				}
				break
			}
			if n < batch || ctx.Err() != nil {
				break
			}
		}
		if total > 0 {
			log.Info("swept", "task", task.Name, "removed", total)
		}
	}
}
