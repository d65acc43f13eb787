package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/agentproto"
)

// reporter delivers one attempt's events in order: started, then progress
// (at most one per ProgressInterval, only the newest when several wait),
// then finished, which carries the last progress too so that pending
// progress can be dropped. Every event is retried with backoff until the
// controller acknowledges it: a finished report is never lost while the
// agent lives.
type reporter struct {
	a         *Agent
	attemptID string
	wake      chan struct{}

	mu           sync.Mutex
	seq          int64
	startPending bool
	progressNew  bool            // lastProgress not yet sent
	lastProgress json.RawMessage // newest progress seen
	tailFn       func() string   // live tail for progress events
	done         *agentproto.AttemptEvent
}

func newReporter(a *Agent, attemptID string, tail func() string) *reporter {
	return &reporter{a: a, attemptID: attemptID, tailFn: tail, wake: make(chan struct{}, 1)}
}

func (r *reporter) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reporter) started() {
	r.mu.Lock()
	r.startPending = true
	r.mu.Unlock()
	r.signal()
}

func (r *reporter) progress(p json.RawMessage) {
	r.mu.Lock()
	r.lastProgress, r.progressNew = p, true
	r.mu.Unlock()
	r.signal()
}

func (r *reporter) finish(o *agentproto.Outcome, tail string) {
	r.mu.Lock()
	r.done = &agentproto.AttemptEvent{Kind: agentproto.EventFinished, Progress: r.lastProgress, OutputTail: tail, Outcome: o}
	r.progressNew = false
	r.mu.Unlock()
	r.signal()
}

// next takes the event to send now, or nil and how long to wait before a
// throttled progress event may go (0: wait for a signal).
func (r *reporter) next(lastProgressSent time.Time) (*agentproto.AttemptEvent, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ev *agentproto.AttemptEvent
	switch {
	case r.startPending:
		r.startPending = false
		ev = &agentproto.AttemptEvent{Kind: agentproto.EventStarted}
	case r.done != nil:
		ev, r.done = r.done, nil
	case r.progressNew:
		if wait := r.a.cfg.ProgressInterval - time.Since(lastProgressSent); !lastProgressSent.IsZero() && wait > 0 {
			return nil, wait
		}
		r.progressNew = false
		ev = &agentproto.AttemptEvent{Kind: agentproto.EventProgress, Progress: r.lastProgress}
		if r.tailFn != nil {
			ev.OutputTail = r.tailFn()
		}
	default:
		return nil, 0
	}
	r.seq++
	ev.Seq, ev.AttemptID, ev.HostID, ev.At = r.seq, r.attemptID, r.a.HostID(), r.a.clk.Now()
	return ev, 0
}

// loop sends events until the finished one is acknowledged or ctx ends.
func (r *reporter) loop(ctx context.Context) {
	var lastProgress time.Time
	for {
		ev, wait := r.next(lastProgress)
		if ev == nil {
			var timer <-chan time.Time
			var t *time.Timer
			if wait > 0 {
				t = time.NewTimer(wait)
				timer = t.C
			}
			select {
			case <-r.wake:
			case <-timer:
			case <-ctx.Done():
			}
			if t != nil {
				t.Stop()
			}
			if ctx.Err() != nil {
				r.a.log.Error("attempt report abandoned at shutdown", "attempt_id", r.attemptID)
				return
			}
			continue
		}
		if !r.deliver(ctx, ev) {
			r.a.log.Error("attempt report abandoned at shutdown", "attempt_id", r.attemptID, "kind", ev.Kind)
			return
		}
		switch ev.Kind {
		case agentproto.EventProgress:
			lastProgress = time.Now()
		case agentproto.EventFinished:
			return
		}
	}
}

// deliver retries ev until acknowledged; false means ctx ended first.
func (r *reporter) deliver(ctx context.Context, ev *agentproto.AttemptEvent) bool {
	var b backoff
	for failures := 0; ; failures++ {
		cctx, cancel := context.WithTimeout(ctx, r.a.cfg.CallTimeout)
		err := r.a.cfg.Controller.Report(cctx, ev)
		cancel()
		if errors.Is(err, ErrAttemptEnded) {
			r.a.log.Info("report of an attempt the controller had already ended", "attempt_id", r.attemptID, "kind", ev.Kind)
			return true
		}
		if err == nil {
			if failures > 0 {
				// Said so that an operator (and a test) sees that what
				// finished while the controller was out of reach was
				// reported once it was back.
				r.a.log.Info("report delivered after failures", "attempt_id", r.attemptID, "kind", ev.Kind, "failures", failures)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d := b.next(r.a.cfg.MinBackoff, r.a.cfg.MaxBackoff)
		r.a.log.Warn("report failed", "attempt_id", r.attemptID, "kind", ev.Kind, "err", err, "retry_in", d)
		if !sleep(ctx, d) {
			return false
		}
	}
}
