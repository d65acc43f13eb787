package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanPush(s scanner) (*store.Push, error) {
	var p store.Push
	var status, diff, index, manifest string
	var created, updated int64
	var started, finished sql.NullInt64
	if err := s.Scan(&p.ID, &p.ProjectID, &p.AccountID, &status, &p.ContentHash, &p.SizeBytes, &diff, &index,
		&manifest, &p.ContextDir, &p.ImageRef, &p.ImageDigest, &p.Error, &p.NextAction, &p.LogTail, &p.Attempts,
		&created, &updated, &started, &finished); err != nil {
		return nil, err
	}
	p.Status = store.PushStatus(status)
	p.TarballDiff, p.FileIndex, p.Manifest = []byte(diff), []byte(index), []byte(manifest)
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updated)
	p.StartedAt, p.FinishedAt = fromNullMicros(started), fromNullMicros(finished)
	return &p, nil
}

func (q *queries) PushCreate(ctx context.Context, p *store.PushCreateParams) (*store.Push, error) {
	pu, err := scanPush(q.write.QueryRowContext(ctx, q.sql("PushCreate"),
		p.ID, p.ProjectID, p.AccountID, p.ContentHash, p.SizeBytes, jsonText(p.TarballDiff, "null"),
		jsonText(p.FileIndex, "{}"), jsonText(p.Manifest, "null"), p.ContextDir, micros(p.Now)))
	return pu, q.mapErr(err)
}

func (q *queries) PushGet(ctx context.Context, projectID, id string) (*store.Push, error) {
	pu, err := scanPush(q.read.QueryRowContext(ctx, q.sql("PushGet"), projectID, id))
	return pu, q.mapErr(err)
}

func (q *queries) PushLatest(ctx context.Context, projectID string) (*store.Push, error) {
	pu, err := scanPush(q.read.QueryRowContext(ctx, q.sql("PushLatest"), projectID))
	return pu, q.mapErr(err)
}

func (q *queries) PushLatestPublished(ctx context.Context, projectID string) (*store.Push, error) {
	pu, err := scanPush(q.read.QueryRowContext(ctx, q.sql("PushLatestPublished"), projectID))
	return pu, q.mapErr(err)
}

func (q *queries) PushActive(ctx context.Context, projectID string) (*store.Push, error) {
	pu, err := scanPush(q.read.QueryRowContext(ctx, q.sql("PushActive"), projectID))
	return pu, q.mapErr(err)
}

func (q *queries) PushList(ctx context.Context, projectID string, limit int) ([]*store.Push, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("PushList"), projectID, limit)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanPush)
}

func (q *queries) PushListUnfinished(ctx context.Context) ([]*store.Push, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("PushListUnfinished"))
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanPush)
}

func (q *queries) PushCountUnfinished(ctx context.Context, accountID string) (int, error) {
	var n int
	err := q.read.QueryRowContext(ctx, q.sql("PushCountUnfinished"), accountID).Scan(&n)
	return n, q.mapErr(err)
}

// guarded maps "no row came back" from a guarded UPDATE ... RETURNING to
// ErrConflict when the row exists, since the guard refused the transition.
func (q *queries) guarded(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrConflict
	}
	return q.mapErr(err)
}

func (q *queries) PushStart(ctx context.Context, id string, now time.Time) (*store.Push, error) {
	pu, err := scanPush(q.write.QueryRowContext(ctx, q.sql("PushStart"), id, micros(now)))
	return pu, q.guarded(err)
}

func (q *queries) PushRequeue(ctx context.Context, id string, now time.Time) error {
	if err := q.execOne(ctx, "PushRequeue", id, micros(now)); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrConflict
		}
		return err
	}
	return nil
}

func (q *queries) PushFinish(ctx context.Context, p *store.PushFinishParams) (*store.Push, error) {
	if !p.Status.IsTerminal() {
		return nil, errors.New("sqldb: PushFinish needs a terminal status")
	}
	pu, err := scanPush(q.write.QueryRowContext(ctx, q.sql("PushFinish"), p.ID, string(p.Status),
		p.ImageRef, p.ImageDigest, p.Error, p.NextAction, p.LogTail, micros(p.Now)))
	return pu, q.guarded(err)
}

func (q *queries) PushSetLogTail(ctx context.Context, id, logTail string, now time.Time) error {
	return q.execOne(ctx, "PushSetLogTail", id, logTail, micros(now))
}
