package cli

import (
	"context"
	"flag"

	"github.com/skiffhq/skiff/internal/server"
	"github.com/skiffhq/skiff/internal/store/sqldb"
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

// open opens and migrates the store (the same as the server's).
func (sf *storeFlags) open(ctx context.Context) (*sqldb.DB, error) {
	return server.OpenStore(ctx, sf.dataDir, sf.databaseURL)
}
