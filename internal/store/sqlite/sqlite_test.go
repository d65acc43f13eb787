package sqlite_test

import (
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
