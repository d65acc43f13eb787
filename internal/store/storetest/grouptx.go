package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testGroupTx checks InGroupTx under concurrency: each fn is all or
// nothing on its own (a refused one leaves nothing, its neighbours in the
// same group keep everything), a conflict inside a group reaches only its
// caller, and every change is visible once InGroupTx returns.
func testGroupTx(t *testing.T, s store.Store) {
	a := tf.Account(t, s, nil)
	const n = 60
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.InGroupTx(ctx(t), func(q store.Querier) error {
				if _, err := q.LedgerEntryCreate(ctx(t), &store.LedgerEntryCreateParams{ID: id.New(id.Ledger), AccountID: a.ID,
					EntryType: "beta_credit_grant", AmountMicros: int64(i + 1), Now: t0}); err != nil {
					return err
				}
				// Fns 2k and 2k+1 write the same project name: one of
				// each pair is refused (a conflict). Every third fn fails.
				if _, err := q.ProjectCreate(ctx(t), &store.ProjectWriteParams{ID: id.New(id.Project), AccountID: a.ID,
					Name: fmt.Sprintf("p-%d", i/2), SetupTimeoutS: 600, RuntimeKind: "oci", RuntimeVersion: 1, Now: t0}); err != nil {
					return err
				}
				if i%3 == 0 {
					return boom
				}
				return nil
			})
			if errs[i] == nil {
				// Visible to a read outside any transaction once returned.
				if _, err := s.ProjectGetByName(ctx(t), a.ID, fmt.Sprintf("p-%d", i/2)); err != nil {
					errs[i] = fmt.Errorf("committed project not visible: %w", err)
				}
			}
		}()
	}
	wg.Wait()
	var want int64
	for i, err := range errs {
		switch {
		case err == nil:
			want += int64(i + 1)
		case errors.Is(err, boom), errors.Is(err, store.ErrConflict):
		default:
			t.Fatalf("fn %d: %v", i, err)
		}
	}
	bal, err := s.BalanceGet(ctx(t), a.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	if bal.LedgerMicros != want {
		t.Errorf("ledger = %d, want %d (the sum of the fns that succeeded)", bal.LedgerMicros, want)
	}
	projects := map[string]bool{}
	for i, err := range errs {
		name := fmt.Sprintf("p-%d", i/2)
		if err == nil {
			if projects[name] {
				t.Errorf("project %s created twice", name)
			}
			projects[name] = true
		}
	}
	for i := range n / 2 {
		name := fmt.Sprintf("p-%d", i)
		_, err := s.ProjectGetByName(ctx(t), a.ID, name)
		if projects[name] != (err == nil) {
			t.Errorf("project %s: committed by a fn %v, in the store: %v", name, projects[name], err)
		}
	}
}
