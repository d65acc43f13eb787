package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/store"
)

// Checkpointing (structured_runner, spec 2.4, 2.5 and 2.10 rule 7).
//
// A runner checkpoints by printing a progress line whose object has a
// "checkpoint" member: SKIFF_PROGRESS:{"pct": 40, "checkpoint": {"step": 400}}.
// The latest such value is kept on the task (its "checkpoint" field) across
// attempts. With checkpointing.enabled and resume_from_latest, an attempt
// after the first receives it in its payload under payload_key (default
// "_resume"), and the task's resume_state shows what it resumed from.
//
// A checkpoint kept as an artifact names a file of the attempt's artifact
// directory in artifact_path. The host uploads that directory when the
// attempt ends, so the checkpoint is "pending" while the attempt runs and,
// at its end, "published" (artifact_id, artifact_source, published_at: the
// upload of that path) or "failed" (publish_error: nothing was uploaded
// under that path, or the host was lost). A resumed attempt then gets the
// published file as one of its inputs.

// Checkpoint state keys: artifact_path is the runner's; the others are the
// service's, and a runner's own values for them are dropped.
const (
	CheckpointArtifactPath   = "artifact_path"
	CheckpointArtifactID     = "artifact_id"
	CheckpointArtifactSource = "artifact_source"
	CheckpointPublishStatus  = "publish_status"
	CheckpointPublishedAt    = "published_at"
	CheckpointPublishError   = "publish_error"
)

// Publish statuses of a checkpoint kept as an artifact.
const (
	CheckpointPending   = "pending"
	CheckpointPublished = "published"
	CheckpointFailed    = "failed"
)

var serviceCheckpointKeys = []string{CheckpointArtifactID, CheckpointArtifactSource, CheckpointPublishStatus,
	CheckpointPublishedAt, CheckpointPublishError}

// checkpointOf is the "checkpoint" member of a progress object, nil when
// it has none. An object checkpoint loses the service's keys the runner
// set, and one that names an artifact_path is pending (or failed at once
// when the path could never be a file of the artifact directory).
func checkpointOf(progress json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(progress, &p) != nil {
		return nil
	}
	c := p["checkpoint"]
	if len(c) == 0 || string(c) == "null" {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(c, &obj) != nil || obj == nil {
		return c // a number, a string, a list: kept as the runner wrote it
	}
	for _, k := range serviceCheckpointKeys {
		delete(obj, k)
	}
	if raw, ok := obj[CheckpointArtifactPath]; ok {
		var p string
		if json.Unmarshal(raw, &p) != nil || !validArtifactPath(p) {
			setString(obj, CheckpointPublishStatus, CheckpointFailed)
			setString(obj, CheckpointPublishError, "artifact_path must be a relative path of a file under the artifact directory (SKIFF_ARTIFACT_DIR)")
		} else {
			setString(obj, CheckpointPublishStatus, CheckpointPending)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return c
	}
	return out
}

func setString(obj map[string]json.RawMessage, k, v string) {
	obj[k], _ = json.Marshal(v)
}

// validArtifactPath: relative, clean, inside the directory.
func validArtifactPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != "." && p != ".." &&
		!strings.HasPrefix(p, "../") && !strings.Contains(p, "\x00")
}

// OutputArtifact is a file an attempt uploaded from its artifact
// directory: its artifact and its path there.
type OutputArtifact struct {
	ID, Path string
}

// pendingCheckpoint is the artifact_path of a pending checkpoint, "" when
// cp is not one.
func pendingCheckpoint(cp json.RawMessage) (map[string]json.RawMessage, string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(cp, &obj) != nil || obj == nil {
		return nil, ""
	}
	var status, p string
	_ = json.Unmarshal(obj[CheckpointPublishStatus], &status)
	_ = json.Unmarshal(obj[CheckpointArtifactPath], &p)
	if status != CheckpointPending || p == "" {
		return nil, ""
	}
	return obj, p
}

// publishCheckpoint settles the pending checkpoint of an attempt that
// ended: published when the attempt uploaded its artifact_path (an
// artifact of this job's task), failed otherwise. It returns nil when cp
// is not pending (nothing to change).
func (s *Service) publishCheckpoint(ctx context.Context, a *store.Attempt, cp json.RawMessage, outputs []OutputArtifact, now time.Time) (json.RawMessage, error) {
	obj, p := pendingCheckpoint(cp)
	if obj == nil {
		return nil, nil
	}
	why := fmt.Sprintf("the attempt ended without uploading %s from its artifact directory (no such regular file, an upload refused, or the host lost)", p)
	for _, out := range outputs {
		if out.Path != p {
			continue
		}
		art, err := s.store.ArtifactGetByID(ctx, out.ID)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint artifact %s: %w", out.ID, err)
		}
		if art.JobID != a.JobID || art.TaskID != a.TaskID {
			break // not this task's upload: never trusted
		}
		delete(obj, CheckpointPublishError)
		setString(obj, CheckpointPublishStatus, CheckpointPublished)
		setString(obj, CheckpointArtifactID, art.ID)
		setString(obj, CheckpointArtifactSource, string(art.Source))
		setString(obj, CheckpointPublishedAt, now.UTC().Format(time.RFC3339Nano))
		return json.Marshal(obj)
	}
	setString(obj, CheckpointPublishStatus, CheckpointFailed)
	setString(obj, CheckpointPublishError, why)
	return json.Marshal(obj)
}

// publishedCheckpointArtifact is the artifact id of a published
// checkpoint, "" otherwise.
func publishedCheckpointArtifact(cp json.RawMessage) string {
	var obj struct {
		Status string `json:"publish_status"`
		ID     string `json:"artifact_id"`
	}
	if json.Unmarshal(cp, &obj) != nil || obj.Status != CheckpointPublished {
		return ""
	}
	return obj.ID
}

// AttemptPayload is the payload attempt a of task t runs with: the task's
// payload, plus its latest checkpoint under payload_key when the job
// resumes from checkpoints and this is not the first attempt.
func (s *Service) AttemptPayload(ctx context.Context, rs *RunSpec, t *store.Task, a *store.Attempt) (json.RawMessage, error) {
	if !resumes(rs, t, a) {
		return t.Payload, nil
	}
	c := rs.Request.Checkpointing
	var p map[string]json.RawMessage
	if err := json.Unmarshal(t.Payload, &p); err != nil || p == nil {
		return t.Payload, nil // not an object: nothing to add to
	}
	p[c.PayloadKey] = t.Checkpoint
	out, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	state, _ := json.Marshal(map[string]any{"checkpoint": t.Checkpoint, "attempt_number": a.Number,
		"payload_key": c.PayloadKey})
	if err := s.store.TaskSetResumeState(ctx, t.ID, state); err != nil {
		return nil, fmt.Errorf("record resume state: %w", err)
	}
	return out, nil
}

// resumes reports whether attempt a of task t resumes from its checkpoint.
func resumes(rs *RunSpec, t *store.Task, a *store.Attempt) bool {
	c := rs.Request.Checkpointing
	return c.Enabled && c.ResumeFromLatest && a.Number >= 2 && len(t.Checkpoint) > 0
}

// checkpointInput is the published checkpoint artifact a resumed attempt
// takes as an input, nil when it has none (or the artifact is gone).
func (s *Service) checkpointInput(ctx context.Context, rs *RunSpec, t *store.Task, a *store.Attempt) (*store.Artifact, error) {
	if !resumes(rs, t, a) {
		return nil, nil
	}
	artID := publishedCheckpointArtifact(t.Checkpoint)
	if artID == "" {
		return nil, nil
	}
	art, err := s.store.ArtifactGetByID(ctx, artID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // purged since: the runner resumes without it
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint artifact %s: %w", artID, err)
	}
	if art.DeletedAt != nil {
		return nil, nil // deleted by its owner: likewise
	}
	return art, nil
}
