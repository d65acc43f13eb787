package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

func testRuntimePreps(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	p := tf.Project(t, s, &tf.ProjectOpts{AccountID: a.ID, Name: "p"})
	put := func(host, hash string, st store.RuntimePrepStatus, now time.Time) *store.RuntimePrep {
		t.Helper()
		r, err := s.RuntimePrepPut(ctx(t), &store.RuntimePrepPutParams{ProjectID: p.ID, HostID: host, ContentHash: hash,
			ImageDigest: "sha256:d", Status: st, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := put("wkr_a", "h1", store.RuntimePreparing, t0)
	if r.ReadyAt != nil || r.Status != store.RuntimePreparing {
		t.Errorf("preparing row = %+v", r)
	}
	r = put("wkr_a", "h1", store.RuntimeReady, t0.Add(time.Second))
	if r.ReadyAt == nil || !r.ReadyAt.Equal(t0.Add(time.Second)) || !r.CreatedAt.Equal(t0) {
		t.Errorf("ready row = %+v", r)
	}
	put("wkr_b", "h1", store.RuntimeFailed, t0)
	list, err := s.RuntimePrepList(ctx(t), p.ID)
	if err != nil || len(list) != 2 || list[0].HostID != "wkr_a" {
		t.Fatalf("list = %v, %v", list, err)
	}
	n, err := s.RuntimePrepMarkStale(ctx(t), p.ID, t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("MarkStale = %d, %v; want 2", n, err)
	}
	n, _ = s.RuntimePrepMarkStale(ctx(t), p.ID, t0.Add(time.Minute))
	if n != 0 {
		t.Errorf("second MarkStale changed %d rows, want 0", n)
	}
	list, _ = s.RuntimePrepList(ctx(t), p.ID)
	for _, r := range list {
		if r.Status != store.RuntimeStale {
			t.Errorf("%s status = %s, want stale", r.HostID, r.Status)
		}
	}
}

func testQuotes(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	b := tf.Account(t, s, &tf.AccountOpts{Name: "bob"})
	q, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "job_shortfall",
		AmountMicros: 4_500_000, Description: "init floor", ExpiresAt: t0.Add(30 * time.Minute), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if q.Status != "open" || string(q.Attrs) != "{}" || q.AmountMicros != 4_500_000 {
		t.Errorf("quote = %+v", q)
	}
	got, err := s.QuoteGet(ctx(t), a.ID, q.ID)
	if err != nil || got.ID != q.ID {
		t.Fatalf("QuoteGet = %v, %v", got, err)
	}
	if _, err := s.QuoteGet(ctx(t), b.ID, q.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other account's quote: got %v, want ErrNotFound", err)
	}
	bal, _ := s.BalanceGet(ctx(t), a.ID, t0)
	if bal.OpenQuoteCount != 1 {
		t.Errorf("open quotes = %d, want 1", bal.OpenQuoteCount)
	}
	bal, _ = s.BalanceGet(ctx(t), a.ID, t0.Add(time.Hour))
	if bal.OpenQuoteCount != 0 {
		t.Errorf("expired quote still counted open: %d", bal.OpenQuoteCount)
	}
	if _, err := s.QuoteCreate(ctx(t), &store.QuoteCreateParams{ID: id.New(id.Quote), AccountID: a.ID, QuoteType: "job_shortfall",
		AmountMicros: 0, ExpiresAt: t0, Now: t0}); err == nil {
		t.Error("a zero-amount quote was stored")
	}
}
