package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/fault"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// openAttemptOf finds an open attempt of the host a token names.
func (c *Controller) openAttemptOf(ctx context.Context, token, attemptID string) (*store.Attempt, error) {
	hostID := c.hostForToken(token)
	if hostID == "" {
		return nil, errUnauthorized
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

// inputsOf lists a task's artifact inputs for its assignment.
func (c *Controller) inputsOf(ctx context.Context, t *store.Task) ([]agentproto.InputArtifact, error) {
	ins, err := job.ArtifactInputs(t.Payload)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []agentproto.InputArtifact
	for _, in := range ins {
		if seen[in.ID] {
			continue
		}
		seen[in.ID] = true
		a, err := c.st.ArtifactGetByID(ctx, in.ID)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.ID, err)
		}
		out = append(out, agentproto.InputArtifact{ID: a.ID, SHA256: a.SHA256, Size: a.SizeBytes, Filename: a.Filename, URL: a.URL})
	}
	return out, nil
}

// serveInput streams one artifact input of an open attempt to its host.
func (c *Controller) serveInput(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Artifacts == nil {
		writeError(w, http.StatusNotFound, "not_found", "this controller keeps no artifacts")
		return
	}
	a, err := c.openAttemptOf(r.Context(), bearer(r), r.PathValue("id"))
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	artID := r.PathValue("artifact_id")
	ok, err := c.st.ArtifactRefExists(r.Context(), artID, a.JobID, store.ArtifactRoleInput)
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	art, err := c.st.ArtifactGetByID(r.Context(), artID)
	if !ok || errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "artifact "+artID+" is not an input of attempt "+a.ID)
		return
	}
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	rc, err := c.cfg.Artifacts.OpenInput(r.Context(), art)
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	if art.Source == store.ArtifactLocal {
		w.Header().Set("Content-Length", strconv.FormatInt(art.SizeBytes, 10))
	}
	if _, err := io.Copy(w, rc); err != nil {
		c.log.Warn("input download cut short", "attempt_id", a.ID, "artifact_id", artID, "err", err)
	}
}

// receiveArtifact stores one file an open attempt uploads: an output, a
// spilled result, or the full output. It belongs to the job's account and
// counts against its quota.
func (c *Controller) receiveArtifact(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Artifacts == nil {
		writeError(w, http.StatusNotFound, "not_found", "this controller keeps no artifacts")
		return
	}
	a, err := c.openAttemptOf(r.Context(), bearer(r), r.PathValue("id"))
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	j, err := c.st.JobGetByID(r.Context(), a.JobID)
	if err != nil {
		c.answer(w, r, nil, err)
		return
	}
	path, kind := r.URL.Query().Get("path"), r.URL.Query().Get("kind")
	kinds := map[string]store.ArtifactKind{
		agentproto.ArtifactKindOutput: store.ArtifactOutput, agentproto.ArtifactKindFailedOutput: store.ArtifactFailedOutput,
		agentproto.ArtifactKindResult: store.ArtifactResult, agentproto.ArtifactKindLog: store.ArtifactLog,
	}
	k, ok := kinds[kind]
	if !ok || path == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "path and a known kind are required")
		return
	}
	art, err := c.cfg.Artifacts.Upload(r.Context(), &artifact.UploadParams{AccountID: j.AccountID, Filename: path,
		JobID: j.ID, TaskID: a.TaskID, Kind: k, Body: r.Body, ContentLength: r.ContentLength})
	if err != nil {
		if fe, ok := fault.As(err); ok && fe.Kind != fault.KindInternal {
			status := map[fault.Kind]int{fault.KindQuotaExceeded: http.StatusInsufficientStorage,
				fault.KindTooLarge: http.StatusRequestEntityTooLarge}[fe.Kind]
			if status == 0 {
				status = http.StatusBadRequest
			}
			writeError(w, status, fe.Code, fe.Message)
			return
		}
		c.answer(w, r, nil, err)
		return
	}
	c.answer(w, r, agentproto.UploadedArtifact{ID: art.ID, Path: path, Kind: kind, Size: art.SizeBytes, SHA256: art.SHA256}, nil)
}
