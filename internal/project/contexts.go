package project

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/internal/project/tarball"
	"github.com/skiffhq/skiff/internal/store"
)

// ContextStore keeps push tarballs in storage every controller reaches (the
// blob store), named by the ref Put returns.
type ContextStore interface {
	Put(ctx context.Context, r io.Reader) (ref string, err error)
	Open(ctx context.Context, ref string) (io.ReadCloser, error)
	Delete(ctx context.Context, ref string) error
}

// sharedContextPrefix marks a push's ContextDir that names a tarball in the
// ContextStore instead of a directory on the controller that accepted it.
const sharedContextPrefix = "blob:"

// shareContext stores the push's tarball (kept at path while it was
// extracted) in the context store and returns the push's ContextDir.
func (s *Service) shareContext(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	ref, err := s.contexts.Put(ctx, f)
	if err != nil {
		return "", fmt.Errorf("store build context: %w", err)
	}
	return sharedContextPrefix + ref, nil
}

// localContext is the directory the push's build reads its context from on
// this controller: the stored one, or, for a shared context, a fresh
// extraction of its tarball under DataDir.
func (s *Service) localContext(ctx context.Context, pu *store.Push) (string, error) {
	ref, shared := strings.CutPrefix(pu.ContextDir, sharedContextPrefix)
	if !shared {
		return pu.ContextDir, nil
	}
	if s.contexts == nil {
		return "", errors.New("the push's build context is in the shared blob store, which this controller is not configured with")
	}
	dir, err := filepath.Abs(filepath.Join(s.pushDir(pu.ID), "context"))
	if err != nil {
		return "", err
	}
	_ = os.RemoveAll(filepath.Dir(dir)) // a take-over's half extraction
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	r, err := s.contexts.Open(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("open build context: %w", err)
	}
	defer r.Close()
	if _, err := tarball.Extract(ctx, r, dir, tarball.Limits{}); err != nil {
		return "", fmt.Errorf("extract build context: %w", err)
	}
	return dir, nil
}

// dropSharedContext deletes a finished push's tarball from the context
// store, unless another unfinished push sent the very same bytes.
func (s *Service) dropSharedContext(ctx context.Context, pu *store.Push) {
	ref, shared := strings.CutPrefix(pu.ContextDir, sharedContextPrefix)
	if !shared || s.contexts == nil {
		return
	}
	others, err := s.store.PushListUnfinished(ctx)
	if err != nil {
		s.log.Warn("keep build context: listing pushes failed", "push", pu.ID, "err", err)
		return
	}
	for _, o := range others {
		if o.ID != pu.ID && o.ContextDir == pu.ContextDir {
			return
		}
	}
	if err := s.contexts.Delete(ctx, ref); err != nil {
		s.log.Warn("delete build context", "push", pu.ID, "err", err)
	}
}
