package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// checkpointState is what a task's checkpoint says of a checkpoint kept as
// an artifact.
type checkpointState struct {
	Step           int        `json:"step"`
	ArtifactPath   string     `json:"artifact_path"`
	ArtifactID     *string    `json:"artifact_id"`
	ArtifactSource *string    `json:"artifact_source"`
	PublishStatus  string     `json:"publish_status"`
	PublishedAt    *time.Time `json:"published_at"`
	PublishError   *string    `json:"publish_error"`
}

func taskCheckpoint(t *testing.T, f *fixture, jobID string) (checkpointState, apiv1.Task) {
	t.Helper()
	var page apiv1.TaskList
	f.member.Get(t, jobPath(jobID, "/tasks")).JSON(t, http.StatusOK, &page)
	if len(page.Tasks) != 1 {
		t.Fatalf("tasks of %s: got %d, want 1", jobID, len(page.Tasks))
	}
	var cp checkpointState
	if err := json.Unmarshal(page.Tasks[0].Checkpoint, &cp); err != nil {
		t.Fatalf("task checkpoint %s: %v", page.Tasks[0].Checkpoint, err)
	}
	return cp, page.Tasks[0]
}

func checkpointSummary(t *testing.T, f *fixture, jobID string) *apiv1.JobCheckpointSummary {
	t.Helper()
	var j apiv1.Job
	f.member.Get(t, jobPath(jobID, "")).JSON(t, http.StatusOK, &j)
	return j.CheckpointSummary
}

// claimWork claims the next queued task as a host's poll does and starts
// its attempt: the attempt described completely (payload, inputs).
func claimWork(t *testing.T, f *fixture) job.Work {
	t.Helper()
	ws, err := f.e.Jobs.ClaimWork(t.Context(), func(prev []job.Claimed) *store.TaskClaimParams {
		if len(prev) > 0 {
			return nil
		}
		return &store.TaskClaimParams{HostID: "wkr_cp", AttemptID: id.New(id.Attempt), ResourceProfile: json.RawMessage(`{}`),
			FreeCPU: 64, FreeMemoryMB: 1 << 20, FreeGPUs: 8, Now: f.e.Clock.Now()}
	})
	if err != nil || len(ws) != 1 {
		t.Fatalf("claim: got %d attempts, %v; want 1", len(ws), err)
	}
	if err := f.e.Jobs.AttemptStarted(t.Context(), ws[0].Attempt, f.e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return ws[0]
}

// A checkpoint that names a file of the artifact directory is kept as an
// artifact: pending while its attempt runs, published (artifact_id,
// artifact_source, published_at) when the attempt's end uploaded it, failed
// when not; a resumed attempt gets the file as an input; the job object
// counts tasks by checkpoint state.
func testCheckpointArtifacts(t *testing.T, f *fixture) {
	ctx := t.Context()
	j := submitJob(t, f.member, map[string]any{"max_retries": 3,
		"checkpointing": map[string]any{"enabled": true, "resume_from_latest": true}})
	zero := apiv1.JobCheckpointSummary{TaskCount: 1}
	if j.CheckpointSummary == nil || *j.CheckpointSummary != zero {
		t.Errorf("submitted: checkpoint_summary %+v, want %+v", j.CheckpointSummary, zero)
	}
	if s := checkpointSummary(t, f, j.ID); s == nil || *s != zero {
		t.Errorf("queued: checkpoint_summary %+v, want %+v", s, zero)
	}

	// Attempt 1 checkpoints to a file; the service's keys it sets are
	// dropped.
	w := claimWork(t, f)
	if err := f.e.Jobs.AttemptProgress(ctx, w.Attempt, json.RawMessage(`{"pct":10,"checkpoint":{"step":100,`+
		`"artifact_path":"ckpt/step-100.pt","publish_status":"published","artifact_id":"art_spoofed"}}`), ""); err != nil {
		t.Fatal(err)
	}
	cp, _ := taskCheckpoint(t, f, j.ID)
	if cp.Step != 100 || cp.PublishStatus != "pending" || cp.ArtifactID != nil || cp.PublishedAt != nil || cp.ArtifactPath != "ckpt/step-100.pt" {
		t.Errorf("running attempt's checkpoint: got %+v, want step 100 pending without an artifact", cp)
	}
	if s := checkpointSummary(t, f, j.ID); s == nil || s.TasksCheckpointed != 1 || s.ArtifactsPending != 1 || s.ArtifactsPublished != 0 {
		t.Errorf("running: checkpoint_summary %+v, want 1 checkpointed, 1 pending", s)
	}

	// It fails after uploading its artifact directory, the file included.
	data := []byte("weights at step 100")
	art, err := f.e.Artifacts.Upload(ctx, &artifact.UploadParams{AccountID: f.acct.ID, Filename: "ckpt/step-100.pt",
		JobID: j.ID, TaskID: w.Task.ID, Kind: store.ArtifactFailedOutput, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	f.e.Clock.Advance(time.Second)
	publishedAt := f.e.Clock.Now()
	if err := f.e.Jobs.AttemptFinished(ctx, w.Attempt, &job.Outcome{ExitCode: 1, StartedAt: publishedAt.Add(-time.Second), EndedAt: publishedAt,
		Outputs: []job.OutputArtifact{{ID: art.ID, Path: "ckpt/step-100.pt"}}}, nil, ""); err != nil {
		t.Fatal(err)
	}
	cp, _ = taskCheckpoint(t, f, j.ID)
	if cp.Step != 100 || cp.PublishStatus != "published" || cp.ArtifactID == nil || *cp.ArtifactID != art.ID ||
		cp.ArtifactSource == nil || *cp.ArtifactSource != "local" || cp.PublishedAt == nil || !cp.PublishedAt.Equal(publishedAt) ||
		cp.PublishError != nil {
		t.Errorf("checkpoint after the attempt: got %+v, want published as %s (local) at %s", cp, art.ID, publishedAt)
	}
	if s := checkpointSummary(t, f, j.ID); s == nil || s.TasksCheckpointed != 1 || s.ArtifactsPending != 0 || s.ArtifactsPublished != 1 {
		t.Errorf("after attempt 1: checkpoint_summary %+v, want 1 published", s)
	}

	// Attempt 2 resumes: the checkpoint in its payload and its file as an
	// input, which the runner finds in _artifacts.local_paths.
	w = claimWork(t, f)
	var payload struct {
		Resume checkpointState `json:"_resume"`
	}
	if err := json.Unmarshal(w.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Resume.ArtifactID == nil || *payload.Resume.ArtifactID != art.ID || payload.Resume.Step != 100 {
		t.Errorf("resumed payload: got %s, want _resume with step 100 and artifact %s", w.Payload, art.ID)
	}
	if len(w.Inputs) != 1 || w.Inputs[0].ID != art.ID {
		t.Errorf("resumed attempt's inputs: got %v, want the checkpoint artifact %s", w.Inputs, art.ID)
	}
	_, task := taskCheckpoint(t, f, j.ID)
	if len(task.ResumeState) == 0 || string(task.ResumeState) == "null" {
		t.Errorf("resumed task: resume_state %s, want what it resumed from", task.ResumeState)
	}
	if s := checkpointSummary(t, f, j.ID); s == nil || s.TasksResumed != 1 {
		t.Errorf("resumed: checkpoint_summary %+v, want 1 resumed", s)
	}

	// It checkpoints again and its host is lost before any upload.
	if err := f.e.Jobs.AttemptProgress(ctx, w.Attempt, json.RawMessage(`{"checkpoint":{"step":200,"artifact_path":"ckpt/step-200.pt"}}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Jobs.AttemptLost(ctx, w.Attempt, "host gone"); err != nil {
		t.Fatal(err)
	}
	cp, _ = taskCheckpoint(t, f, j.ID)
	if cp.Step != 200 || cp.PublishStatus != "failed" || cp.ArtifactID != nil || cp.PublishError == nil || *cp.PublishError == "" {
		t.Errorf("checkpoint of a lost attempt: got %+v, want step 200 failed with a publish_error", cp)
	}
	if s := checkpointSummary(t, f, j.ID); s == nil || s.ArtifactsFailed != 1 || s.ArtifactsPublished != 0 {
		t.Errorf("after the loss: checkpoint_summary %+v, want 1 failed", s)
	}
	// The next attempt resumes from the latest checkpoint, without a file.
	w = claimWork(t, f)
	if len(w.Inputs) != 0 {
		t.Errorf("resumed from a failed checkpoint: inputs %v, want none", w.Inputs)
	}

	// A path that cannot be a file of the artifact directory fails at once.
	if err := f.e.Jobs.AttemptProgress(ctx, w.Attempt, json.RawMessage(`{"checkpoint":{"step":300,"artifact_path":"../../etc/passwd"}}`), ""); err != nil {
		t.Fatal(err)
	}
	if cp, _ = taskCheckpoint(t, f, j.ID); cp.PublishStatus != "failed" || cp.PublishError == nil {
		t.Errorf("checkpoint with a path outside the artifact dir: got %+v, want failed", cp)
	}

	// A job without checkpointing has no checkpoint summary.
	plain := submitJob(t, f.member, nil)
	raw := f.member.Get(t, jobPath(plain.ID, "")).Object(t, http.StatusOK)
	if _, ok := raw["checkpoint_summary"]; ok {
		t.Errorf("job without checkpointing: got checkpoint_summary %v, want none", raw["checkpoint_summary"])
	}
}
