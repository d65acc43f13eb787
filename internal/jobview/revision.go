package jobview

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/internal/store"
)

// ProjectContentHash is the content hash of the project revision job j
// runs on (its push, fixed at admission), "" when that revision is no
// longer known: result entries carry it as project_content_hash.
func (s *Service) ProjectContentHash(ctx context.Context, j *store.Job) (string, error) {
	if j.PushID == "" {
		return "", nil
	}
	p, err := s.store.PushGet(ctx, j.ProjectID, j.PushID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("revision of job %s: %w", j.ID, err)
	}
	return p.ContentHash, nil
}
