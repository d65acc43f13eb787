package e2e_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// pgSampler watches one PostgreSQL database during a benchmark: every
// 20 ms it counts the database's active backends (its own left out) and
// those waiting on a lock (pg_stat_activity.wait_event_type = 'Lock'), and
// it sums the CPU the database's backends spent (from /proc: PostgreSQL
// runs on this machine). A backend that exits before the end is missed.
type pgSampler struct {
	db      *sql.DB
	cancel  context.CancelFunc
	done    chan struct{}
	start   map[int]int64 // CPU ticks of the backends found at the start
	samples int
	waited  int
	byEvent map[string]int // lock waits by wait_event (tuple, transactionid, advisory, ...)
}

func startPGSampler(t *testing.T, url string) *pgSampler {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	s := &pgSampler{db: db, cancel: cancel, done: make(chan struct{}), start: map[int]int64{}, byEvent: map[string]int{}}
	for _, pid := range s.backends(t) {
		s.start[pid] = procTicks(pid)
	}
	go s.sample(ctx)
	return s
}

// backends are the pids of the database's backends other than the
// sampler's own.
func (s *pgSampler) backends(t *testing.T) []int {
	t.Helper()
	rows, err := s.db.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func (s *pgSampler) sample(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rows, err := s.db.QueryContext(ctx, `SELECT COALESCE(wait_event_type, ''), COALESCE(wait_event, '')
			FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
		if err != nil {
			continue // cancelled at the end
		}
		for rows.Next() {
			var typ, event string
			if rows.Scan(&typ, &event) != nil {
				break
			}
			s.samples++
			if typ == "Lock" {
				s.waited++
				s.byEvent[event]++
			}
		}
		rows.Close()
	}
}

// stop ends the sampling and returns the backends' CPU in milliseconds
// since the start, and the active and lock-waiting backend samples.
func (s *pgSampler) stop(t *testing.T) (cpuMS float64, samples, waited int, byEvent map[string]int) {
	t.Helper()
	s.cancel()
	<-s.done
	defer s.db.Close()
	var ticks int64
	for _, pid := range s.backends(t) {
		ticks += procTicks(pid) - s.start[pid]
	}
	return ticksToMS(ticks), s.samples, s.waited, s.byEvent
}
