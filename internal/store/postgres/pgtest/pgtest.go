// Package pgtest gives tests a fresh PostgreSQL database on the server named
// by SKIFF_TEST_POSTGRES_URL, and skips them when it is unset (fails them
// under SKIFF_TEST_REQUIRE_ALL=1, see internal/testenv).
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/skiffhq/skiff/internal/testenv"
)

// EnvURL names the variable holding the test server's URL.
const EnvURL = "SKIFF_TEST_POSTGRES_URL"

// NewDatabase creates an empty database for this test, drops it when the
// test ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		testenv.Skipf(t, "PostgreSQL tests skipped: set %s (make test sets it up)", EnvURL)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := "skiff_t_" + strings.ToLower(rand.Text()[:12])
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	dropAtCleanup(t, admin, name)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", EnvURL, err))
	}
	u.Path = "/" + name
	return u.String()
}

// CloneDatabase creates a copy of the database at srcURL (which nothing may
// be connected to: PostgreSQL copies a template only when it is idle),
// drops it when the test ends, and returns its URL.
func CloneDatabase(t testing.TB, srcURL string) string {
	t.Helper()
	src, err := url.Parse(srcURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", os.Getenv(EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	name := "skiff_t_" + strings.ToLower(rand.Text()[:12])
	if _, err := admin.ExecContext(context.Background(),
		"CREATE DATABASE "+name+" TEMPLATE "+strings.TrimPrefix(src.Path, "/")); err != nil {
		admin.Close()
		t.Fatalf("clone test database: %v", err)
	}
	dropAtCleanup(t, admin, name)
	src.Path = "/" + name
	return src.String()
}

// dropAtCleanup drops the database name when the test ends, and closes
// admin.
func dropAtCleanup(t testing.TB, admin *sql.DB, name string) {
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
}
