package storetest

// Job events: listing, the feed by position and its commit order.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testJobEvents(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	other := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, other)
	// Written out of time order; read back in the order written (their
	// positions), whatever their times.
	for _, e := range []store.JobEvent{
		{Kind: "task.started", TaskID: p.Tasks[0].ID, CreatedAt: t0.Add(2 * time.Second)},
		{Kind: "job.queued", CreatedAt: t0.Add(time.Second)},
		{Kind: "attempt.lost", TaskID: p.Tasks[0].ID, AttemptID: "att_x", Data: json.RawMessage(`{"host":"wkr_a"}`),
			CreatedAt: t0.Add(3 * time.Second)},
	} {
		e.ID, e.JobID = id.New(id.Event), p.Job.ID
		if err := s.JobEventCreate(ctx(t), &e); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.JobEventList(ctx(t), p.Job.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if fmt.Sprint(kinds) != "[job.submitted task.started job.queued attempt.lost]" {
		t.Errorf("kinds = %v", kinds)
	}
	last := evs[3]
	if last.TaskID != p.Tasks[0].ID || last.AttemptID != "att_x" || string(last.Data) != `{"host":"wkr_a"}` ||
		string(evs[1].Data) != "{}" {
		t.Errorf("events = %+v", evs)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Position <= evs[i-1].Position {
			t.Errorf("positions not increasing: %d then %d", evs[i-1].Position, evs[i].Position)
		}
	}
	if evs, _ := s.JobEventList(ctx(t), p.Job.ID, 2); len(evs) != 2 || evs[1].Kind != "task.started" {
		t.Errorf("limit 2 = %v", evs)
	}
	if evs, _ := s.JobEventList(ctx(t), other.Job.ID, 0); len(evs) != 1 {
		t.Errorf("other job's events = %v", evs)
	}
	if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: "job_nope", Kind: "x", CreatedAt: t0}); err == nil {
		t.Error("an event of a job that does not exist was stored")
	}
}

// testJobEventFeed: the feed lists committed events after a position, by
// position, filtered by job, account or project.
func testJobEventFeed(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	a := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, a)
	b := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, b)
	bob := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	g := tf.Project(t, s, &tf.ProjectOpts{AccountID: bob.ID, Name: "q"})
	c := tf.JobParams(t, s, &tf.JobOpts{Project: g})
	tf.JobFrom(t, s, c)
	for _, jobID := range []string{a.Job.ID, b.Job.ID, c.Job.ID, a.Job.ID} {
		if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: jobID, Kind: "job.queued", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	feed := func(p store.JobEventFeedParams) []string {
		t.Helper()
		evs, err := s.JobEventFeed(ctx(t), &p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		var last int64
		for _, e := range evs {
			if e.Position <= last || e.Position <= p.After {
				t.Errorf("position %d after %d (cursor %d)", e.Position, last, p.After)
			}
			last = e.Position
			out = append(out, map[string]string{a.Job.ID: "a", b.Job.ID: "b", c.Job.ID: "c"}[e.JobID]+":"+e.Kind)
		}
		return out
	}
	all := feed(store.JobEventFeedParams{})
	want := "[a:job.submitted b:job.submitted c:job.submitted a:job.queued b:job.queued c:job.queued a:job.queued]"
	if fmt.Sprint(all) != want {
		t.Errorf("feed = %v, want %s", all, want)
	}
	last, err := s.JobEventLastPosition(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{})
	if last != evs[len(evs)-1].Position {
		t.Errorf("last position = %d, want %d", last, evs[len(evs)-1].Position)
	}
	if got := feed(store.JobEventFeedParams{After: evs[3].Position}); fmt.Sprint(got) != "[b:job.queued c:job.queued a:job.queued]" {
		t.Errorf("after the 4th = %v", got)
	}
	if got := feed(store.JobEventFeedParams{JobIDs: []string{a.Job.ID, c.Job.ID}, Limit: 3}); fmt.Sprint(got) != "[a:job.submitted c:job.submitted a:job.queued]" {
		t.Errorf("jobs a, c, limit 3 = %v", got)
	}
	if got := feed(store.JobEventFeedParams{AccountID: bob.ID}); fmt.Sprint(got) != "[c:job.submitted c:job.queued]" {
		t.Errorf("bob's = %v", got)
	}
	if got := feed(store.JobEventFeedParams{ProjectID: f.ID, After: evs[2].Position}); fmt.Sprint(got) != "[a:job.queued b:job.queued a:job.queued]" {
		t.Errorf("project p after the 3rd = %v", got)
	}
	if got := feed(store.JobEventFeedParams{After: last}); len(got) != 0 {
		t.Errorf("after the last = %v", got)
	}
	if n, err := s.TaskQueuedCount(ctx(t)); err != nil || n != 3 {
		t.Errorf("queued tasks = %d, %v; want 3", n, err)
	}
}

// testJobEventFeedCommitOrder: an event written early by a transaction that
// commits late is still read by a reader that already passed the events
// committed meanwhile: positions follow commit order, not insert order.
// SQLite has one writer, so the interleaving cannot happen there.
func testJobEventFeedCommitOrder(t *testing.T, s store.Store) {
	if s.Engine() == "sqlite" {
		t.Log("SQLite runs one write transaction at a time: commit order is insert order")
		return
	}
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	inserted, release := make(chan struct{}), make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		slow <- s.InTx(ctx(t), func(q store.Querier) error {
			if err := q.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "slow", CreatedAt: t0}); err != nil {
				return err
			}
			close(inserted)
			<-release
			return nil
		})
	}()
	<-inserted
	if err := s.JobEventCreate(ctx(t), &store.JobEvent{ID: id.New(id.Event), JobID: p.Job.ID, Kind: "fast", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	first, err := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(first); n != 2 || first[1].Kind != "fast" {
		t.Fatalf("before the slow commit: %d events, last %q; want job.submitted, fast", n, first[n-1].Kind)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	rest, err := s.JobEventFeed(ctx(t), &store.JobEventFeedParams{After: first[1].Position})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Kind != "slow" {
		t.Errorf("after the fast event: %d events; want the slow one", len(rest))
	}
}

// testJobEventPage: a job's events page by position both ways, without
// another job's events, each page starting where the cursor says.
func testJobEventPage(t *testing.T, s store.Store) {
	f := tf.Project(t, s, nil)
	p := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, p)
	other := tf.JobParams(t, s, &tf.JobOpts{Project: f})
	tf.JobFrom(t, s, other)
	for i := range 6 {
		for _, jobID := range []string{p.Job.ID, other.Job.ID} {
			e := store.JobEvent{ID: id.New(id.Event), JobID: jobID, Kind: fmt.Sprintf("e%d", i), CreatedAt: t0}
			if err := s.JobEventCreate(ctx(t), &e); err != nil {
				t.Fatal(err)
			}
		}
	}
	page := func(pp store.JobEventPageParams) (kinds []string, positions []int64) {
		t.Helper()
		pp.JobID = p.Job.ID
		evs, err := s.JobEventPage(ctx(t), &pp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.JobID != p.Job.ID {
				t.Errorf("page of %s has an event of %s", p.Job.ID, e.JobID)
			}
			kinds, positions = append(kinds, e.Kind), append(positions, e.Position)
		}
		return kinds, positions
	}
	// Oldest first, three at a time: job.submitted e0 e1 | e2 e3 e4 | e5.
	k1, pos1 := page(store.JobEventPageParams{Limit: 3})
	k2, pos2 := page(store.JobEventPageParams{After: pos1[2], Limit: 3})
	k3, _ := page(store.JobEventPageParams{After: pos2[2], Limit: 3})
	if got := fmt.Sprint(k1, k2, k3); got != "[job.submitted e0 e1] [e2 e3 e4] [e5]" {
		t.Errorf("oldest-first pages = %s", got)
	}
	// Newest first from the end, then before the page's last.
	n1, npos := page(store.JobEventPageParams{Newest: true, Limit: 4})
	n2, _ := page(store.JobEventPageParams{Newest: true, Before: npos[3], Limit: 4})
	if got := fmt.Sprint(n1, n2); got != "[e5 e4 e3 e2] [e1 e0 job.submitted]" {
		t.Errorf("newest-first pages = %s", got)
	}
	// Both bounds: the events strictly between.
	if k, _ := page(store.JobEventPageParams{After: pos1[0], Before: pos2[1], Limit: 10}); fmt.Sprint(k) != "[e0 e1 e2]" {
		t.Errorf("between = %v", k)
	}
	if k, _ := page(store.JobEventPageParams{After: pos2[2] + 1000, Limit: 10}); len(k) != 0 {
		t.Errorf("after the last = %v, want none", k)
	}
}
