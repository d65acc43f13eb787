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

// OpenStore opens and migrates the store a server and the operator
// commands share: PostgreSQL at databaseURL, or else SQLite under dataDir.
func OpenStore(ctx context.Context, dataDir, databaseURL string) (*sqldb.DB, error) {
	var db *sqldb.DB
	var err error
	switch u := databaseURL; {
	case u == "":
		db, err = sqlite.Open(ctx, filepath.Join(dataDir, "skiff.db"))
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

// openStore takes Config.DB, or opens the store the config names and
// closes it at release.
func (s *Server) openStore(ctx context.Context) error {
	if s.cfg.DB != nil {
		s.db = s.cfg.DB
		return nil
	}
	db, err := OpenStore(ctx, s.cfg.DataDir, s.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	s.db = db
	s.closers = append(s.closers, func() {
		if err := db.Close(); err != nil {
			s.log.Error("close store", "err", err)
		}
	})
	return nil
}
