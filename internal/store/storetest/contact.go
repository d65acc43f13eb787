package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

var contactTests = map[string]func(*testing.T, store.Store){
	"WaitlistOnceEach":       testWaitlistOnceEach,
	"FeedbackStoredAndPaged": testFeedbackStoredAndPaged,
	"FeedbackRefusesBadRows": testFeedbackRefusesBadRows,
}

func testWaitlistOnceEach(t *testing.T, s store.Store) {
	first, created, err := s.WaitlistAdd(ctx(t), &store.WaitlistAddParams{ID: id.New(id.Waitlist), Email: "a@example.com", Now: t0})
	if err != nil || !created {
		t.Fatalf("WaitlistAdd(a) = %v, created %v, %v; want created", first, created, err)
	}
	again, created, err := s.WaitlistAdd(ctx(t), &store.WaitlistAddParams{ID: id.New(id.Waitlist), Email: "a@example.com", Now: t0.Add(time.Minute)})
	if err != nil || created {
		t.Fatalf("WaitlistAdd(a) again: created %v, %v; want the stored entry, not created", created, err)
	}
	if again.ID != first.ID || !again.CreatedAt.Equal(t0) {
		t.Errorf("repeat returned %+v, want the first entry %+v", again, first)
	}
	if _, _, err := s.WaitlistAdd(ctx(t), &store.WaitlistAddParams{ID: id.New(id.Waitlist), Email: "b@example.com", Now: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.WaitlistList(ctx(t), &store.ListParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Email != "b@example.com" || list[1].Email != "a@example.com" {
		t.Errorf("WaitlistList = %+v, want b then a (newest first), once each", list)
	}
	page, err := s.WaitlistList(ctx(t), &store.ListParams{Limit: 1, Offset: 1})
	if err != nil || len(page) != 1 || page[0].Email != "a@example.com" {
		t.Errorf("WaitlistList(limit 1, offset 1) = %+v, %v; want [a]", page, err)
	}
	// The database keeps addresses normalised even if a caller forgets to.
	if err := rawExec(t, s, `INSERT INTO waitlist (id, email, created_at) VALUES ('wl_x', 'Upper@Example.com', 0)`); err == nil {
		t.Error("inserting a mixed-case address succeeded; want the CHECK constraint to refuse it")
	}
}

func testFeedbackStoredAndPaged(t *testing.T, s store.Store) {
	acct := tf.Account(t, s, &tf.AccountOpts{Name: "fb"})
	anon, err := s.FeedbackCreate(ctx(t), &store.FeedbackCreateParams{ID: id.New(id.Feedback), Type: store.FeedbackBug,
		Title: "t1", Description: "d1", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if anon.AccountID != "" || anon.JobID != "" || string(anon.Metadata) != "{}" {
		t.Errorf("anonymous feedback = %+v, want no account, no job, metadata {}", anon)
	}
	tied, err := s.FeedbackCreate(ctx(t), &store.FeedbackCreateParams{ID: id.New(id.Feedback), Type: store.FeedbackJobTypeRequest,
		Title: "t2", Description: "d2", JobID: "job_x", Metadata: json.RawMessage(`{"k":[1,2]}`), AccountID: acct.ID, Now: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.FeedbackList(ctx(t), &store.ListParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != tied.ID || list[1].ID != anon.ID {
		t.Fatalf("FeedbackList = %+v, want [t2, t1]", list)
	}
	got := list[0]
	var meta map[string]any
	if err := json.Unmarshal(got.Metadata, &meta); err != nil || len(meta) != 1 {
		t.Errorf("metadata = %s, want {\"k\":[1,2]}", got.Metadata)
	}
	if got.Type != store.FeedbackJobTypeRequest || got.AccountID != acct.ID || got.JobID != "job_x" ||
		got.Title != "t2" || got.Description != "d2" || !got.CreatedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("stored feedback = %+v, want what was sent", got)
	}
}

func testFeedbackRefusesBadRows(t *testing.T, s store.Store) {
	if _, err := s.FeedbackCreate(ctx(t), &store.FeedbackCreateParams{ID: id.New(id.Feedback), Type: "praise",
		Title: "t", Description: "d", Now: t0}); err == nil {
		t.Error("feedback of type praise stored; want the CHECK constraint to refuse it")
	}
	if _, err := s.FeedbackCreate(ctx(t), &store.FeedbackCreateParams{ID: id.New(id.Feedback), Type: store.FeedbackBug,
		Title: "", Description: "d", Now: t0}); err == nil {
		t.Error("feedback without a title stored; want the CHECK constraint to refuse it")
	}
}
