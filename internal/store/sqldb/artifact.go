package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

func scanArtifact(s scanner) (*store.Artifact, error) {
	var a store.Artifact
	var source, kind string
	var created int64
	var deleted, lastRef sql.NullInt64
	if err := s.Scan(&a.ID, &a.AccountID, &a.SHA256, &a.SizeBytes, &a.Filename, &source, &a.URL, &a.JobID, &a.TaskID,
		&kind, &created, &deleted, &a.ReferenceCount, &a.ActiveReferenceCount, &lastRef); err != nil {
		return nil, err
	}
	a.Source, a.Kind = store.ArtifactSource(source), store.ArtifactKind(kind)
	a.CreatedAt, a.DeletedAt, a.LastReferencedAt = fromMicros(created), fromNullMicros(deleted), fromNullMicros(lastRef)
	a.TerminalReferenceCount = a.ReferenceCount - a.ActiveReferenceCount
	return &a, nil
}

func (q *queries) ArtifactCreate(ctx context.Context, p *store.ArtifactCreateParams) (*store.Artifact, error) {
	kind := p.Kind
	if kind == "" {
		kind = store.ArtifactUpload
	}
	if _, err := q.write.ExecContext(ctx, q.sql("ArtifactCreate"), p.ID, p.AccountID, p.SHA256, p.SizeBytes, p.Filename,
		string(p.Source), p.URL, p.JobID, p.TaskID, string(kind), micros(p.Now)); err != nil {
		return nil, q.mapErr(err)
	}
	if p.JobID != "" {
		if err := q.ArtifactRefAdd(ctx, &store.ArtifactRefParams{ArtifactID: p.ID, JobID: p.JobID,
			Role: store.ArtifactRoleOutput, Now: p.Now}); err != nil {
			return nil, err
		}
	}
	a, err := scanArtifact(q.write.QueryRowContext(ctx, q.sql("ArtifactGet"), p.AccountID, p.ID))
	return a, q.mapErr(err)
}

func (q *queries) ArtifactGet(ctx context.Context, accountID, id string) (*store.Artifact, error) {
	a, err := scanArtifact(q.read.QueryRowContext(ctx, q.sql("ArtifactGet"), accountID, id))
	return a, q.mapErr(err)
}

func (q *queries) ArtifactList(ctx context.Context, p *store.ArtifactListParams) ([]*store.Artifact, int, error) {
	var total int
	if err := q.read.QueryRowContext(ctx, q.sql("ArtifactCount"), p.AccountID).Scan(&total); err != nil {
		return nil, 0, q.mapErr(err)
	}
	rows, err := q.read.QueryContext(ctx, q.sql("ArtifactList"), p.AccountID, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, q.mapErr(err)
	}
	out, err := collect(rows, scanArtifact)
	return out, total, err
}

func (q *queries) ArtifactQuotaUsed(ctx context.Context, accountID string) (int64, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("ArtifactQuotaUsed"), accountID).Scan(&n)
	return n, q.mapErr(err)
}

func (q *queries) ArtifactContentCounted(ctx context.Context, accountID, sha string) (bool, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("ArtifactContentCounted"), accountID, sha).Scan(&n)
	return n > 0, q.mapErr(err)
}

func (q *queries) ArtifactRefAdd(ctx context.Context, p *store.ArtifactRefParams) error {
	_, err := q.write.ExecContext(ctx, q.sql("ArtifactRefAdd"), p.ArtifactID, p.JobID, string(p.Role), micros(p.Now))
	return q.mapErr(err)
}

func (q *queries) ArtifactHide(ctx context.Context, accountID, id string, now time.Time) error {
	res, err := q.write.ExecContext(ctx, q.sql("ArtifactHide"), accountID, id, micros(now))
	if err != nil {
		return q.mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	// The guard refused: either there is no such visible artifact, or an
	// active job refers to it.
	if _, err := scanArtifact(q.write.QueryRowContext(ctx, q.sql("ArtifactGet"), accountID, id)); err != nil {
		return q.mapErr(err)
	}
	return store.ErrConflict
}

func (q *queries) ArtifactListHiddenBefore(ctx context.Context, t time.Time, limit int) ([]*store.Artifact, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("ArtifactListHiddenBefore"), micros(t), limit)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanArtifact)
}

func (q *queries) ArtifactPurge(ctx context.Context, id string) error {
	_, err := q.write.ExecContext(ctx, q.sql("ArtifactPurge"), id)
	return q.mapErr(err)
}

func (q *queries) ArtifactContentHeld(ctx context.Context, sha string) (bool, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("ArtifactContentHeld"), sha).Scan(&n)
	return n > 0, q.mapErr(err)
}

func (q *queries) ArtifactGetByID(ctx context.Context, id string) (*store.Artifact, error) {
	a, err := scanArtifact(q.read.QueryRowContext(ctx, q.sql("ArtifactGetByID"), id))
	return a, q.mapErr(err)
}

func (q *queries) ArtifactRefExists(ctx context.Context, artifactID, jobID string, role store.ArtifactRole) (bool, error) {
	var n int64
	err := q.read.QueryRowContext(ctx, q.sql("ArtifactRefExists"), artifactID, jobID, string(role)).Scan(&n)
	return n > 0, q.mapErr(err)
}

func (q *queries) ArtifactListByJob(ctx context.Context, jobID string) ([]*store.Artifact, error) {
	rows, err := q.read.QueryContext(ctx, q.sql("ArtifactListByJob"), jobID)
	if err != nil {
		return nil, q.mapErr(err)
	}
	return collect(rows, scanArtifact)
}
