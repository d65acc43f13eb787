package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// Several processes opening one fresh data dir at once (two `skiff admin`
// commands, an admin command beside a starting server) each migrate it:
// every one succeeds, and between them each migration is applied once.
func TestConcurrentMigrateOfAFreshDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "skiff.db")
	const n = 6
	applied := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			db, err := sqlite.Open(t.Context(), path)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			applied[i], errs[i] = db.Migrate(t.Context(), time.Now())
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		}
		for _, name := range applied[i] {
			seen[name]++
		}
	}
	if len(seen) == 0 {
		t.Fatal("no migrator applied anything")
	}
	for name, times := range seen {
		if times != 1 {
			t.Errorf("migration %s applied %d times, want once", name, times)
		}
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
