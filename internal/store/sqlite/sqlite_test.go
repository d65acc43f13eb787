package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/sqlite"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "skiff.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(t.Context(), time.Now()); err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestMigrateIsIdempotentAndSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skiff.db")
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	first, err := db.Migrate(t.Context(), time.Now())
	if err != nil || len(first) == 0 {
		t.Fatalf("first Migrate = %v, %v", first, err)
	}
	db.Close()
	db, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := db.Migrate(t.Context(), time.Now())
	if err != nil || len(again) != 0 {
		t.Fatalf("second Migrate applied %v, %v; want nothing", again, err)
	}
	ok, err := db.Migrated(t.Context())
	if err != nil || !ok {
		t.Fatalf("Migrated = %v, %v", ok, err)
	}
}

// Committed writes reach the database file soon after they commit, long
// before the WAL holds the thousands of pages at which the writer would
// checkpoint it itself: checkpoints run beside the writer, not in it.
func TestCommittedWritesReachTheDatabaseFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skiff.db")
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// Wait until the migrations are in the file (its size stops changing).
	before := size()
	for {
		time.Sleep(300 * time.Millisecond)
		now := size()
		if now == before {
			break
		}
		before = now
	}
	for i := range 300 {
		if _, err := db.AccountCreate(t.Context(), &store.AccountCreateParams{ID: fmt.Sprintf("acct_%04d", i),
			Name: fmt.Sprintf("account %d", i), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); size() <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes for 10 s after 300 accounts were committed", before)
		}
	}
}
