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
	db.SetMaxOpenConns(16)
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
	})
}

func isUniqueViolation(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23505"
}
