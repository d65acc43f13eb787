// Package sqldb implements store.Store over database/sql for both engines.
// The SQL lives in .sql files: a common set written in the dialect both
// engines accept ($N placeholders, BIGINT, TEXT), and per-engine files that
// replace a query or a migration of the same name where the engines differ.
package sqldb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/skiffhq/skiff/internal/store"
)

//go:embed queries/*.sql migrations/*.sql
var common embed.FS

// Engine describes one database engine.
type Engine struct {
	Name string
	// Write runs transactions and writes; Read serves reads outside a
	// transaction. They may be the same pool.
	Write, Read *sql.DB
	// Overrides holds queries/*.sql and migrations/*.sql that replace the
	// common files of the same name.
	Overrides fs.FS
	// IsUniqueViolation recognises the engine's unique-constraint error.
	IsUniqueViolation func(error) bool
	// MigrationLock, when set, is held while Migrate runs, so that
	// several processes migrating one database at once apply each
	// migration once and wait for each other instead of failing.
	MigrationLock func(ctx context.Context) (release func(), err error)
	// GroupCommit lets InGroupTx share one transaction among queued
	// callers: for an engine with a single writer.
	GroupCommit bool
	// OnClose, when set, runs at Close before the pools close (the
	// engine's own background work).
	OnClose func()
}

// DB is a store.Store.
type DB struct {
	*queries // outside a transaction: the pools
	engine   Engine
	sqlText  map[string]string
	group    *groupCommitter // nil: InGroupTx is InTx
}

var _ store.Store = (*DB)(nil)

// Open prepares the query set. It does not migrate; call Migrate.
func Open(e Engine) (*DB, error) {
	qs, err := loadQueries(common, e.Overrides)
	if err != nil {
		return nil, err
	}
	db := &DB{engine: e, sqlText: qs}
	db.queries = &queries{db: db, read: e.Read, write: e.Write}
	if e.GroupCommit {
		db.group = &groupCommitter{db: db}
	}
	return db, nil
}

// queries implements store.Querier against one executor: the pools outside a
// transaction, or one *sql.Tx inside it.
type queries struct {
	db          *DB
	read, write executor
}

type executor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (q *queries) sql(name string) string {
	s, ok := q.db.sqlText[name]
	if !ok {
		// A missing query is a programming error caught by the conformance suite.
		panic("sqldb: no query named " + name)
	}
	return s
}

// mapErr turns engine errors into the store's sentinel errors.
func (q *queries) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case q.db.engine.IsUniqueViolation != nil && q.db.engine.IsUniqueViolation(err):
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	return err
}

func (db *DB) Engine() string { return db.engine.Name }

func (db *DB) Ping(ctx context.Context) error { return db.engine.Write.PingContext(ctx) }

func (db *DB) Close() error {
	if db.engine.OnClose != nil {
		db.engine.OnClose()
	}
	err := db.engine.Write.Close()
	if db.engine.Read != db.engine.Write {
		err = errors.Join(err, db.engine.Read.Close())
	}
	return err
}

// InTx runs fn in one transaction on the write pool.
func (db *DB) InTx(ctx context.Context, fn func(q store.Querier) error) error {
	tx, err := db.engine.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(&queries{db: db, read: tx, write: tx}); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ExecForTest runs raw SQL. Only the conformance suite uses it, to prove that
// the database itself refuses what no store method offers.
func (db *DB) ExecForTest(ctx context.Context, query string, args ...any) error {
	_, err := db.engine.Write.ExecContext(ctx, query, args...)
	return err
}
