package artifact

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Local keeps content on local disk: <dir>/<sha[:2]>/<sha>, written to
// <dir>/tmp first and renamed into place once its hash is known.
type Local struct {
	dir string
}

var _ Blob = (*Local)(nil)

// NewLocal opens (creating) a local blob store rooted at dir. Leftover
// temporary files of a previous process are removed.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(abs, "tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("clear %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create blob dir: %w", err)
	}
	return &Local{dir: abs}, nil
}

func (l *Local) path(sha string) string { return filepath.Join(l.dir, sha[:2], sha) }

func (l *Local) Stage(ctx context.Context, r io.Reader, limit int64) (Staged, error) {
	f, err := os.CreateTemp(filepath.Join(l.dir, "tmp"), "put-"+rand.Text()[:8]+"-*")
	if err != nil {
		return nil, fmt.Errorf("create temp blob: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), &limitReader{r: ctxReader{ctx, r}, n: limit})
	if err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync blob: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("close blob: %w", err)
	}
	ok = true
	return &localStaged{l: l, tmp: f.Name(), res: PutResult{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}}, nil
}

type localStaged struct {
	l    *Local
	tmp  string
	res  PutResult
	done bool
}

func (s *localStaged) Result() PutResult { return s.res }

func (s *localStaged) Commit(ctx context.Context) error {
	if s.done {
		return errors.New("artifact: staged content already committed or aborted")
	}
	dst := s.l.path(s.res.SHA256)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	// Renaming over present content replaces it with the same bytes and a
	// fresh modification time.
	if err := os.Rename(s.tmp, dst); err != nil {
		return fmt.Errorf("commit blob: %w", err)
	}
	s.done = true
	return nil
}

func (s *localStaged) Abort(ctx context.Context) error {
	if s.done {
		return nil
	}
	s.done = true
	if err := os.Remove(s.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *Local) Open(ctx context.Context, sha string, offset, length int64) (io.ReadCloser, error) {
	if !ValidDigest(sha) {
		return nil, ErrBadDigest
	}
	f, err := os.Open(l.path(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
	}
	if length < 0 {
		return f, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, length), f}, nil
}

func (l *Local) Stat(ctx context.Context, sha string) (Info, error) {
	if !ValidDigest(sha) {
		return Info{}, ErrBadDigest
	}
	fi, err := os.Stat(l.path(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, err
	}
	return Info{Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

func (l *Local) Delete(ctx context.Context, sha string) error {
	if !ValidDigest(sha) {
		return ErrBadDigest
	}
	if err := os.Remove(l.path(sha)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *Local) SignedURL(ctx context.Context, sha string, ttl time.Duration) (string, error) {
	return "", ErrNoSignedURL
}

// Path is where content lives on disk, for tests that check files.
func (l *Local) Path(sha string) string { return l.path(sha) }

// TempDir is where Stage writes before it knows the hash.
func (l *Local) TempDir() string { return filepath.Join(l.dir, "tmp") }
