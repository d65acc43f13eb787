package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testHoldReserve: a reservation the balance covers creates the hold and
// reports what was available before it; one it does not cover creates
// nothing; a missing account is not found.
func testHoldReserve(t *testing.T, s store.Store) {
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	if _, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
		EntryType: "grant", AmountMicros: 1000, Now: t0}); err != nil {
		t.Fatal(err)
	}
	reserve := func(acct, job string, amount int64) (*store.Hold, int64, error) {
		var h *store.Hold
		var avail int64
		err := s.InGroupTx(ctx(t), func(q store.Querier) error {
			var err error
			h, avail, err = q.HoldReserve(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: acct,
				JobID: job, AmountMicros: amount, Now: t0})
			return err
		})
		return h, avail, err
	}
	h, avail, err := reserve(a.ID, "job_1", 600)
	if err != nil || h == nil || avail != 1000 || h.AmountMicros != 600 || h.Status != store.HoldActive || h.JobID != "job_1" {
		t.Fatalf("first reservation: %+v, %d, %v; want a hold of 600 with 1000 available before it", h, avail, err)
	}
	if got, err := s.HoldGetByJob(ctx(t), "job_1"); err != nil || got.ID != h.ID || got.AmountMicros != 600 || !got.CreatedAt.Equal(t0) {
		t.Fatalf("stored hold: %+v, %v; want %+v", got, err, h)
	}
	h, avail, err = reserve(a.ID, "job_2", 401)
	if err != nil || h != nil || avail != 400 {
		t.Fatalf("short reservation: %+v, %d, %v; want no hold with 400 available", h, avail, err)
	}
	if _, err := s.HoldGetByJob(ctx(t), "job_2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a short reservation stored a hold: %v", err)
	}
	if h, avail, err = reserve(a.ID, "job_3", 400); err != nil || h == nil || avail != 400 {
		t.Fatalf("exact reservation: %+v, %d, %v; want a hold with 400 available", h, avail, err)
	}
	if bal, _ := s.BalanceGet(ctx(t), a.ID, t0); bal.HeldMicros != 1000 || bal.ActiveHoldCount != 2 || bal.AvailableMicros() != 0 {
		t.Errorf("balance: %+v; want 1000 held in two holds, nothing available", bal)
	}
	if _, _, err := reserve("acc_missing", "job_4", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reserving for a missing account: %v; want ErrNotFound", err)
	}
}

// testHoldReserveConcurrent: N concurrent reservations, each in its own
// group transaction, against a balance that covers K of them create
// exactly K holds, and the balance is never overdrawn.
func testHoldReserveConcurrent(t *testing.T, s store.Store) {
	const n, k, amount = 24, 7, 100
	a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
	if _, err := s.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
		EntryType: "grant", AmountMicros: k*amount + amount/2, Now: t0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var tried atomic.Int32
	held := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.InGroupTx(ctx(t), func(q store.Querier) error {
				h, _, err := q.HoldReserve(ctx(t), &store.HoldCreateParams{ID: id.New(id.Hold), AccountID: a.ID,
					JobID: fmt.Sprintf("job_%d", i), AmountMicros: amount, Now: t0})
				held[i] = h != nil
				// Stay uncommitted a while (until every reservation was
				// tried, at most 50 ms) so that the others run while this
				// hold is not yet visible: a check that did not wait for
				// it would overdraw the balance.
				tried.Add(1)
				for start := time.Now(); tried.Load() < n && time.Since(start) < 50*time.Millisecond; {
					time.Sleep(time.Millisecond)
				}
				return err
			})
		})
	}
	wg.Wait()
	admitted := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("reservation %d: %v", i, errs[i])
		}
		if held[i] {
			admitted++
		}
	}
	bal, err := s.BalanceGet(ctx(t), a.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	if admitted != k || bal.ActiveHoldCount != k || bal.HeldMicros != k*amount || bal.AvailableMicros() != amount/2 {
		t.Errorf("%d concurrent reservations against a balance for %d: %d admitted, balance %+v; want exactly %d holds",
			n, k, admitted, bal, k)
	}
}
