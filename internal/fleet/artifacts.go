package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/store"
)

// openAttemptOf finds an open attempt of the host a token names.
func (c *Controller) openAttemptOf(ctx context.Context, token, attemptID string) (*store.Attempt, error) {
	hostID, _, err := c.hostForToken(ctx, token)
	if err != nil {
		return nil, err
	}
	a, err := c.st.AttemptGet(ctx, attemptID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.HostID != hostID) {
		return nil, errGone
	}
	if err != nil {
		return nil, fmt.Errorf("attempt %s: %w", attemptID, err)
	}
	if a.Status != store.AttemptAssigned && a.Status != store.AttemptRunning {
		return nil, errGone
	}
	return a, nil
}

// errNoArtifacts answers the artifact endpoints of a controller built
// without an artifact service.
var errNoArtifacts = fault.New(fault.KindNotFound, "not_found", "", "this controller keeps no artifacts")

// OpenInput opens artifact artifactID, an input of the open attempt
// attemptID of the host token names, for its host to download. The caller
// closes the reader; the artifact says its size for a local one.
func (c *Controller) OpenInput(ctx context.Context, token, attemptID, artifactID string) (io.ReadCloser, *store.Artifact, error) {
	if c.cfg.Artifacts == nil {
		return nil, nil, errNoArtifacts
	}
	a, err := c.openAttemptOf(ctx, token, attemptID)
	if err != nil {
		return nil, nil, err
	}
	ok, err := c.st.ArtifactRefExists(ctx, artifactID, a.JobID, store.ArtifactRoleInput)
	if err != nil {
		return nil, nil, err
	}
	art, err := c.st.ArtifactGetByID(ctx, artifactID)
	if err == nil && !ok {
		// A resumed attempt's published checkpoint: a file its own task
		// uploaded (job.Service's checkpointInput).
		ok = art.JobID == a.JobID && art.TaskID == a.TaskID
	}
	if !ok || errors.Is(err, store.ErrNotFound) {
		return nil, nil, fault.New(fault.KindNotFound, "not_found", "", "artifact %s is not an input of attempt %s", artifactID, a.ID)
	}
	if err != nil {
		return nil, nil, err
	}
	rc, err := c.cfg.Artifacts.OpenInput(ctx, art)
	if err != nil {
		return nil, nil, err
	}
	return rc, art, nil
}

// ReceiveArtifact stores one file an open attempt uploads: an output, a
// spilled result, or the full output (kind, an agentproto.ArtifactKind*),
// named path. It belongs to the job's account and counts against its
// quota.
func (c *Controller) ReceiveArtifact(ctx context.Context, token, attemptID, path, kind string, body io.Reader, contentLength int64) (*agentproto.UploadedArtifact, error) {
	if c.cfg.Artifacts == nil {
		return nil, errNoArtifacts
	}
	a, err := c.openAttemptOf(ctx, token, attemptID)
	if err != nil {
		return nil, err
	}
	j, err := c.st.JobGetByID(ctx, a.JobID)
	if err != nil {
		return nil, err
	}
	kinds := map[string]store.ArtifactKind{
		agentproto.ArtifactKindOutput: store.ArtifactOutput, agentproto.ArtifactKindFailedOutput: store.ArtifactFailedOutput,
		agentproto.ArtifactKindResult: store.ArtifactResult, agentproto.ArtifactKindLog: store.ArtifactLog,
	}
	k, ok := kinds[kind]
	if !ok || path == "" {
		return nil, fault.New(fault.KindBadRequest, "bad_request", "", "path and a known kind are required")
	}
	art, err := c.cfg.Artifacts.Upload(ctx, &artifact.UploadParams{AccountID: j.AccountID, Filename: path,
		JobID: j.ID, TaskID: a.TaskID, Kind: k, Body: body, ContentLength: contentLength})
	if err != nil {
		return nil, err
	}
	return &agentproto.UploadedArtifact{ID: art.ID, Path: path, Kind: kind, Size: art.SizeBytes, SHA256: art.SHA256}, nil
}
