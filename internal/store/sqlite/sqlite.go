// Package sqlite opens the embedded store: SQLite through the pure-Go
// modernc driver (no cgo), in WAL mode.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/skiffhq/skiff/internal/store/sqldb"
)

//go:embed queries/*.sql migrations/*.sql
var overrides embed.FS

// Open opens (creating if needed) the database file at path.
//
// SQLite allows one writer at a time, so writes go through a pool of one
// connection whose transactions start with BEGIN IMMEDIATE: writers queue in
// Go instead of failing with SQLITE_BUSY on a lock upgrade. Reads use their
// own pool and run concurrently under WAL. Every connection of both pools
// keeps the statements it has prepared (see cachingConn).
func Open(ctx context.Context, path string) (*sqldb.DB, error) {
	w, err := OpenWriter(ctx, path)
	if err != nil {
		return nil, err
	}
	r, err := openDB(dsn(path, ""))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// Keep every read connection rather than database/sql's default of two
	// idle ones: opening one costs its pragmas and schema load, and drops the
	// statements it has prepared.
	r.SetMaxOpenConns(max(4, runtime.NumCPU()))
	r.SetMaxIdleConns(max(4, runtime.NumCPU()))
	stop := startCheckpointer(r)
	db, err := sqldb.Open(sqldb.Engine{
		Name:              "sqlite",
		Write:             w,
		Read:              r,
		Overrides:         overrides,
		IsUniqueViolation: isUniqueViolation,
		GroupCommit:       true,
		OnClose:           stop,
	})
	if err != nil {
		stop()
	}
	return db, err
}

// OpenWriter opens the write pool of the store at path as Open does: every
// pragma, BEGIN IMMEDIATE, one connection, cached statements. Open builds
// on it; `skiff bench` opens its admission floor's database with it, so
// that the floor runs with the store's settings and no copy of them.
func OpenWriter(ctx context.Context, path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create dir: %w", err)
	}
	// The writer leaves checkpoints to the background checkpointer
	// (checkpoint.go) and runs one itself only as a backstop, when the WAL
	// has grown well past SQLite's default of 1,000 pages.
	w, err := openDB(dsn(path, "immediate", fmt.Sprintf("wal_autocheckpoint(%d)", backstopCheckpointPages)))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	w.SetMaxOpenConns(1)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return w, nil
}

// dsn is the driver's name for the database at path with the store's
// pragmas, then pragmas, and txlock ("": the driver's default, deferred).
func dsn(path, txlock string, pragmas ...string) string {
	v := url.Values{}
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "busy_timeout(10000)")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "synchronous(NORMAL)")
	for _, p := range pragmas {
		v.Add("_pragma", p)
	}
	if txlock != "" {
		v.Add("_txlock", txlock)
	}
	return "file:" + path + "?" + v.Encode()
}

// openDB opens dsn with the driver registered as "sqlite" (as sql.Open
// would), each connection keeping its own prepared statements: parsing SQL
// is a large share of the pure-Go engine's time, and database/sql would
// otherwise prepare every query anew on every call.
func openDB(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(cachingConnector{c}), nil
}

func isUniqueViolation(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
