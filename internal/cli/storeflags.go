package cli

import (
	"flag"

	"github.com/skiffhq/skiff/internal/server"
)

func registerStore(fs *flag.FlagSet, sf *server.StoreConfig) {
	fs.StringVar(&sf.DataDir, "data-dir", sf.DataDir, "directory for the SQLite database, builds and artifacts (env SKIFF_DATA_DIR)")
	fs.StringVar(&sf.DatabaseURL, "database-url", sf.DatabaseURL, "postgres:// URL to use PostgreSQL instead of the embedded SQLite (env SKIFF_DATABASE_URL)")
}
