package storetest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/store"
	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/postgres/pgtest"
	"github.com/skiffhq/skiff/internal/store/sqlite"
)

// MigratedAt is the time the openers' migrations are recorded at.
var MigratedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Engine opens a fresh, migrated store of one kind for a test.
type Engine struct {
	Name string
	Open func(t testing.TB) store.Store
	// Skip, when set, says why the engine cannot run here; tests pass it
	// to testenv.Skip, which fails them under SKIFF_TEST_REQUIRE_ALL=1.
	Skip string
}

// Engines lists every store engine. PostgreSQL runs only when
// SKIFF_TEST_POSTGRES_URL names a server; otherwise its Skip says so.
func Engines() []Engine {
	pg := Engine{Name: "postgres", Open: OpenPostgres}
	if os.Getenv(pgtest.EnvURL) == "" {
		pg.Skip = "PostgreSQL tests skipped: set " + pgtest.EnvURL
	}
	return []Engine{{Name: "sqlite", Open: OpenSQLite}, pg}
}

// OpenSQLite opens a migrated SQLite store under t.TempDir(), closed when
// the test ends.
func OpenSQLite(t testing.TB) store.Store {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), MigratedAt); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return db
}

// OpenPostgres opens a migrated store in a fresh PostgreSQL database
// (pgtest.NewDatabase), or skips the test when none is configured.
func OpenPostgres(t testing.TB) store.Store {
	t.Helper()
	db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(t.Context(), MigratedAt); err != nil {
		t.Fatalf("migrate postgres: %v", err)
	}
	return db
}
