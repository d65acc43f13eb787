package artifact

import (
	"context"
	"io"
)

// Files keeps whole files in a Blob, each named by its sha256: how
// controllers share build contexts (project.ContextStore).
type Files struct {
	Blob  Blob
	Limit int64 // the largest file Put takes
}

// Put stores r and returns its name.
func (f Files) Put(ctx context.Context, r io.Reader) (string, error) {
	res, err := Put(ctx, f.Blob, r, f.Limit)
	return res.SHA256, err
}

// Open reads the file named ref.
func (f Files) Open(ctx context.Context, ref string) (io.ReadCloser, error) {
	return f.Blob.Open(ctx, ref, 0, -1)
}

// Delete removes the file named ref.
func (f Files) Delete(ctx context.Context, ref string) error { return f.Blob.Delete(ctx, ref) }
