package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanProject(s scanner) (*store.Project, error) {
	var p store.Project
	var env, manifest, cache string
	var created, updated int64
	if err := s.Scan(&p.ID, &p.AccountID, &p.Name, &p.RemoteDir, &env, &p.SetupTimeoutS, &p.RuntimeKind,
		&p.ImageRef, &p.ImageDigest, &manifest, &cache, &p.RuntimeVersion, &p.ContentHash, &created, &updated); err != nil {
		return nil, err
	}
	p.Env, p.Manifest, p.CachePolicy = []byte(env), []byte(manifest), []byte(cache)
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &p, nil
}

func (q *queries) ProjectCreate(ctx context.Context, p *store.ProjectWriteParams) (*store.Project, error) {
	pr, err := scanProject(q.write.QueryRowContext(ctx, q.sql("ProjectCreate"),
		p.ID, p.AccountID, p.Name, p.RemoteDir, jsonText(p.Env, "{}"), p.SetupTimeoutS, p.RuntimeKind,
		p.ImageRef, p.ImageDigest, jsonText(p.Manifest, "null"), jsonText(p.CachePolicy, "null"),
		p.RuntimeVersion, micros(p.Now)))
	return pr, q.mapErr(err)
}

func (q *queries) ProjectGetByName(ctx context.Context, accountID, name string) (*store.Project, error) {
	pr, err := scanProject(q.read.QueryRowContext(ctx, q.sql("ProjectGetByName"), accountID, name))
	return pr, q.mapErr(err)
}

func (q *queries) ProjectGetByID(ctx context.Context, id string) (*store.Project, error) {
	pr, err := scanProject(q.read.QueryRowContext(ctx, q.sql("ProjectGetByID"), id))
	return pr, q.mapErr(err)
}

func (q *queries) ProjectList(ctx context.Context, accountID string) ([]*store.Project, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("ProjectList"), accountID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanProject)
}

func (q *queries) ProjectUpdate(ctx context.Context, p *store.ProjectWriteParams) (*store.Project, error) {
	pr, err := scanProject(q.write.QueryRowContext(ctx, q.sql("ProjectUpdate"),
		p.ID, p.RemoteDir, jsonText(p.Env, "{}"), p.SetupTimeoutS, p.RuntimeKind, p.ImageRef, p.ImageDigest,
		jsonText(p.Manifest, "null"), jsonText(p.CachePolicy, "null"), p.RuntimeVersion, micros(p.Now)))
	return pr, q.mapErr(err)
}

func (q *queries) ProjectSetContentHash(ctx context.Context, id, contentHash string, now time.Time) error {
	return q.execOne(ctx, "ProjectSetContentHash", id, contentHash, micros(now))
}

func (q *queries) ProjectCacheEpoch(ctx context.Context, id string) (int64, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("ProjectCacheEpoch"), id).Scan(&n)
	return n, q.mapErr(err)
}

func (q *queries) ProjectBumpCacheEpoch(ctx context.Context, id string, now time.Time) (int64, error) {
	var n int64
	err := q.write.QueryRowContext(ctx, q.sql("ProjectBumpCacheEpoch"), id, micros(now)).Scan(&n)
	return n, q.mapErr(err)
}

func (q *queries) ProjectDelete(ctx context.Context, id string) error {
	return q.execOne(ctx, "ProjectDelete", id)
}

func scanKV(s scanner) (*store.KVEntry, error) {
	var e store.KVEntry
	var value string
	var ttl, expires sql.NullInt64
	var created, updated int64
	if err := s.Scan(&e.ProjectID, &e.Key, &value, &ttl, &expires, &created, &updated); err != nil {
		return nil, err
	}
	e.Value = []byte(value)
	e.TTLS = fromNullInt(ttl)
	e.ExpiresAt = fromNullMicros(expires)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &e, nil
}

func (q *queries) KVPut(ctx context.Context, p *store.KVPutParams) (*store.KVEntry, error) {
	e, err := scanKV(q.write.QueryRowContext(ctx, q.sql("KVPut"),
		p.ProjectID, p.Key, string(p.Value), nullInt(p.TTLS), nullMicros(p.ExpiresAt), micros(p.Now)))
	return e, q.mapErr(err)
}

func (q *queries) KVGet(ctx context.Context, projectID, key string, now time.Time) (*store.KVEntry, error) {
	e, err := scanKV(q.read.QueryRowContext(ctx, q.sql("KVGet"), projectID, key, micros(now)))
	return e, q.mapErr(err)
}

// prefixEnd is the smallest string greater than every string starting with
// prefix, given that keys are valid UTF-8.
func prefixEnd(prefix string) string { return prefix + string(rune(0x10FFFF)) }

func (q *queries) KVList(ctx context.Context, p *store.KVListParams) ([]*store.KVEntry, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("KVList"), p.ProjectID, p.Prefix, prefixEnd(p.Prefix), micros(p.Now), p.Limit)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanKV)
}

func (q *queries) KVAccountUsage(ctx context.Context, accountID string, now time.Time) (store.KVUsage, error) {
	var u store.KVUsage
	err := q.read.QueryRowContext(ctx, q.sql("KVAccountUsage"), accountID, micros(now)).Scan(&u.Keys, &u.Bytes)
	return u, q.mapErr(err)
}

func (q *queries) KVDelete(ctx context.Context, projectID, key string, now time.Time) error {
	return q.execOne(ctx, "KVDelete", projectID, key, micros(now))
}

// execOne runs a write that must touch exactly one row: zero rows means the
// row is missing or the guard refused it.
func (q *queries) execOne(ctx context.Context, name string, args ...any) error {
	res, err := q.write.ExecContext(ctx, q.sql(name), args...)
	if err != nil {
		return q.mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

func collect[T any](rows *sql.Rows, scan func(scanner) (*T, error)) ([]*T, error) {
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
