// Package postgres opens the multi-node store: PostgreSQL through pgx's
// database/sql adapter, so both engines share database/sql types.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/skiffhq/skiff/internal/store/sqldb"
)

//go:embed queries/*.sql migrations/*.sql
var overrides embed.FS

// Open connects to the database at url (postgres://...).
func Open(ctx context.Context, url string) (*sqldb.DB, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	// As many idle connections as open ones: with database/sql's default
	// of 2, a burst of more than two concurrent transactions closed every
	// connection beyond two when it ended and opened a new one (a new
	// backend process, its fork and authentication) for the next.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	return sqldb.Open(sqldb.Engine{
		Name:              "postgres",
		Write:             db,
		Read:              db,
		Overrides:         overrides,
		IsUniqueViolation: isUniqueViolation,
		MigrationLock:     func(ctx context.Context) (func(), error) { return migrationLock(ctx, db) },
	})
}

// migrationLockKey is 0x736b6966 ("skif") << 8 | 2; 1 is the event
// numbering lock of migration 015.
const migrationLockKey = 495723308546

// migrationLock holds a session advisory lock on a connection of its own
// until released, so that controllers starting together migrate one after
// the other (the later ones then find nothing to apply).
func migrationLock(ctx context.Context, db *sql.DB) (func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLockKey)); err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		// Unlocking on a closed session is implicit: closing the
		// connection ends it. Unlock first so a pooled reuse is clean.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLockKey))
		_ = conn.Close()
	}, nil
}

func isUniqueViolation(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23505"
}
