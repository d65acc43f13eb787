package storetest

import (
	"testing"

	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
	tf "github.com/skiffhq/skiff/internal/store/storetest/testfactory"
)

// testAccounts has one subtest per account method, each on rows of its own.
func testAccounts(t *testing.T, s store.Store) {
	t.Run("AccountCreate", func(t *testing.T) {
		a := tf.Account(t, s, &tf.AccountOpts{Name: "alice"})
		if a.Name != "alice" || !a.CreatedAt.Equal(t0) {
			t.Errorf("created = %+v, want alice at %v", a, t0)
		}
		_, err := s.AccountCreate(ctx(t), &store.AccountCreateParams{ID: id.New(id.Account), Name: "alice", Now: t0})
		wantErr(t, err, store.ErrConflict)
	})
	t.Run("AccountGetByName", func(t *testing.T) {
		a := tf.Account(t, s, &tf.AccountOpts{Name: "carol"})
		got, err := s.AccountGetByName(ctx(t), "carol")
		if err != nil || got.ID != a.ID {
			t.Fatalf("AccountGetByName = %v, %v; want id %s", got, err, a.ID)
		}
		_, err = s.AccountGetByName(ctx(t), "nobody")
		wantErr(t, err, store.ErrNotFound)
	})
	t.Run("AccountGetByID", func(t *testing.T) {
		a := tf.Account(t, s, &tf.AccountOpts{Name: "dave"})
		got, err := s.AccountGetByID(ctx(t), a.ID)
		if err != nil || got.Name != "dave" {
			t.Fatalf("AccountGetByID = %v, %v", got, err)
		}
		_, err = s.AccountGetByID(ctx(t), "acct_nope")
		wantErr(t, err, store.ErrNotFound)
	})
}
