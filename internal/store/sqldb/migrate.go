package sqldb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Migrate applies the migrations not yet recorded, each in its own
// transaction together with its record, so a crash never leaves one half
// applied. It returns the names it applied.
func (db *DB) Migrate(ctx context.Context, now time.Time) ([]string, error) {
	ms, err := loadMigrations(common, db.engine.Overrides)
	if err != nil {
		return nil, err
	}
	if lock := db.engine.MigrationLock; lock != nil {
		release, err := lock(ctx)
		if err != nil {
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		defer release()
	}
	w := db.engine.Write
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	if err := db.refuseNewer(ctx, ms); err != nil {
		return nil, err
	}
	var applied []string
	for _, m := range ms {
		done, err := db.migrationApplied(ctx, m.name)
		if err != nil {
			return applied, err
		}
		if done {
			continue
		}
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			return applied, err
		}
		// A concurrent process may have applied it between the check and
		// the transaction (two commands opening one fresh SQLite data dir;
		// PostgreSQL also holds an advisory lock): the primary key on name
		// makes the second one fail and roll back instead of applying
		// twice, and it goes on when the record is there.
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`,
			m.name, now.UnixMicro()); err != nil {
			_ = tx.Rollback()
			if done, cerr := db.migrationApplied(ctx, m.name); cerr == nil && done {
				continue
			}
			return applied, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			_ = tx.Rollback()
			return applied, fmt.Errorf("migration %s: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return applied, fmt.Errorf("commit migration %s: %w", m.name, err)
		}
		applied = append(applied, m.name)
	}
	return applied, nil
}

func (db *DB) migrationApplied(ctx context.Context, name string) (bool, error) {
	var n int
	err := db.engine.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE name = $1`, name).Scan(&n)
	return n > 0, err
}

// Migrated reports whether every known migration is applied.
func (db *DB) Migrated(ctx context.Context) (bool, error) {
	ms, err := loadMigrations(common, db.engine.Overrides)
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		ok, err := db.migrationApplied(ctx, m.name)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// ErrSchemaNewer is a database migrated by a newer version than this one.
var ErrSchemaNewer = errors.New("the database schema is newer than this version knows")

// refuseNewer fails when the database records a migration this version
// does not have: a newer controller migrated it, and this one would read
// and write a schema it does not know.
func (db *DB) refuseNewer(ctx context.Context, known []migration) error {
	rows, err := db.engine.Write.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("applied migrations: %w", err)
	}
	defer rows.Close()
	names := make(map[string]bool, len(known))
	for _, m := range known {
		names[m.name] = true
	}
	var unknown []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if !names[n] {
			unknown = append(unknown, n)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: it has %s; upgrade this binary", ErrSchemaNewer, strings.Join(unknown, ", "))
	}
	return nil
}
