package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/sqldb"
	"github.com/skiffhq/skiff/internal/store/sqlite"
)

// StoreConfig are shared by the server and the operator commands, so both
// always open the same store.
type StoreConfig struct {
	DataDir     string
	DatabaseURL string
}

// Open opens and migrates the store.
func (sf *StoreConfig) Open(ctx context.Context) (*sqldb.DB, error) {
	var db *sqldb.DB
	var err error
	switch u := sf.DatabaseURL; {
	case u == "":
		db, err = sqlite.Open(ctx, filepath.Join(sf.DataDir, "skiff.db"))
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		db, err = postgres.Open(ctx, u)
	default:
		return nil, fmt.Errorf("--database-url must start with postgres:// (leave it empty for the embedded SQLite)")
	}
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx, time.Now().UTC()); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return db, nil
}
