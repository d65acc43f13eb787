package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/store/sqldb"
	"github.com/skiffhq/skiff/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
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

// TestMigrateConcurrently: controllers starting together on one fresh
// database each migrate it; the advisory lock makes them take turns, so
// every one succeeds and each migration is applied once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const n = 4
	errs := make(chan error, n)
	applied := make(chan int, n)
	for range n {
		go func() {
			db, err := postgres.Open(t.Context(), url)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			names, err := db.Migrate(t.Context(), time.Now())
			applied <- len(names)
			errs <- err
		}()
	}
	total := 0
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("migrate: %v", err)
		}
	}
	close(applied)
	for a := range applied {
		if a != 0 && total != 0 {
			t.Errorf("two controllers applied migrations")
		}
		total += a
	}
	if total == 0 {
		t.Error("no controller applied the migrations")
	}
}

// TestRefuseNewerSchema: a controller refuses a database that a newer
// version migrated.
func TestRefuseNewerSchema(t *testing.T) {
	t.Parallel()
	db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := db.ExecForTest(t.Context(), `INSERT INTO schema_migrations (name, applied_at) VALUES ('999_future', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(t.Context(), time.Now()); !errors.Is(err, sqldb.ErrSchemaNewer) {
		t.Fatalf("migrate against a newer schema: %v, want ErrSchemaNewer", err)
	}
}

// TestDispatchAcrossControllers: claimers spread over three controllers'
// connection pools on one database race for 300 queued tasks. FOR UPDATE
// SKIP LOCKED hands each task to exactly one of them, with no leader.
func TestDispatchAcrossControllers(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var stores []store.Store
	for i := range 3 {
		db, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if i == 0 {
			if _, err := db.Migrate(t.Context(), time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		stores = append(stores, db)
	}
	storetest.ClaimRaceAcrossStores(t, stores)
}
