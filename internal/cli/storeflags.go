package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store/postgres"
	"github.com/skiffhq/skiff/internal/store/sqldb"
	"github.com/skiffhq/skiff/internal/store/sqlite"
)

// storeFlags are shared by the server and the operator commands, so both
// always open the same store.
type storeFlags struct {
	dataDir     string
	databaseURL string
}

func (sf *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.dataDir, "data-dir", "./skiff-data", "directory for the SQLite database, builds and artifacts (env SKIFF_DATA_DIR)")
	fs.StringVar(&sf.databaseURL, "database-url", "", "postgres:// URL to use PostgreSQL instead of the embedded SQLite (env SKIFF_DATABASE_URL)")
}

// open opens and migrates the store.
func (sf *storeFlags) open(ctx context.Context) (*sqldb.DB, error) {
	var db *sqldb.DB
	var err error
	switch u := sf.databaseURL; {
	case u == "":
		db, err = sqlite.Open(ctx, filepath.Join(sf.dataDir, "skiff.db"))
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
