package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skiffhq/skiff/internal/store"
)

// maxGroup bounds how many fns share one commit, so that one transaction
// never holds the writer long and a failed commit fails few callers.
const maxGroup = 64

// groupReq is one fn waiting for a group transaction.
type groupReq struct {
	ctx  context.Context
	fn   func(q store.Querier) error
	done chan error
}

// groupCommitter runs queued fns in shared transactions. One goroutine at a
// time leads: it takes what is queued, runs each fn in a savepoint of one
// transaction and commits once. Nothing waits for company: a lone fn runs
// at once, alone; under load the fns that queued while a group ran form
// the next group. That is where the commits are saved: SQLite's commit
// (the WAL frames of every page touched, and their writes) and the hand-off
// of the one write connection cost as much as an admission's statements.
type groupCommitter struct {
	db *DB

	mu      sync.Mutex
	queue   []*groupReq
	leading bool
}

// InGroupTx: see store.Store. Engines with concurrent writers run fn in a
// transaction of its own.
func (db *DB) InGroupTx(ctx context.Context, fn func(q store.Querier) error) error {
	if db.group == nil {
		return db.InTx(ctx, fn)
	}
	return db.group.run(ctx, fn)
}

func (g *groupCommitter) run(ctx context.Context, fn func(q store.Querier) error) error {
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, r)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		g.lead()
	}
	return <-r.done
}

// lead runs groups until the queue is empty, then gives up the lead.
func (g *groupCommitter) lead() {
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroup)
		if n == 0 {
			g.leading = false
			g.mu.Unlock()
			return
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		g.runGroup(batch)
	}
}

// runGroup runs batch in one transaction and answers each request once
// the transaction has committed (or failed): a caller refused inside the
// group (a conflict, a shortfall) hears so only when the others' changes
// are visible, so that it may read what they wrote.
func (g *groupCommitter) runGroup(batch []*groupReq) {
	results := make([]error, len(batch))
	err := g.group(batch, results)
	for i, r := range batch {
		if err != nil && results[i] == nil {
			results[i] = err
		}
		r.done <- results[i]
	}
}

// group fills results with each fn's own error and returns the error that
// fails every fn whose result is nil (begin, a savepoint or the commit).
func (g *groupCommitter) group(batch []*groupReq, results []error) error {
	if len(batch) == 1 {
		results[0] = g.db.InTx(batch[0].ctx, batch[0].fn)
		return nil
	}
	// The transaction outlives any one caller: a cancelled caller's fn is
	// skipped, and cannot cancel the group's statements.
	ctx := context.WithoutCancel(batch[0].ctx)
	tx, err := g.db.engine.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	q := &queries{db: g.db, read: tx, write: tx}
	ran := false
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT admission"); err != nil {
			return errors.Join(fmt.Errorf("savepoint: %w", err), tx.Rollback())
		}
		if err := r.fn(q); err != nil {
			results[i] = err
			if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO admission"); rerr != nil {
				// SQLite rolled the whole transaction back (an I/O
				// error, a full disk): nothing of this group stays.
				return errors.Join(fmt.Errorf("rollback to savepoint: %w", rerr), tx.Rollback())
			}
		} else {
			ran = true
		}
		if _, err := tx.ExecContext(ctx, "RELEASE admission"); err != nil {
			return errors.Join(fmt.Errorf("release savepoint: %w", err), tx.Rollback())
		}
	}
	if !ran {
		return tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
