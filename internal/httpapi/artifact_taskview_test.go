package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/store"
)

// testArtifactTaskViews follows a task whose attempt uploaded files (as
// the controller stores them: an output, the full output, a spilled
// result) through every endpoint that shows the task: GET
// /jobs/{id}/tasks, /results/{job_id}, /results?include_tasks and the
// job stream's snapshot.
func testArtifactTaskViews(t *testing.T, f *fixture) {
	j := submitJob(t, f.member, nil)
	task, a := startJob(t, f, j.ID)
	startAttempt(t, f, a)
	put := func(name string, kind store.ArtifactKind, body string) *store.Artifact {
		t.Helper()
		f.e.Clock.Advance(time.Second) // one after the other, as an attempt uploads them
		art, err := f.e.Artifacts.Upload(t.Context(), &artifact.UploadParams{AccountID: f.acct.ID, Filename: name,
			JobID: j.ID, TaskID: task.ID, Kind: kind, Body: bytes.NewReader([]byte(body)), ContentLength: int64(len(body))})
		if err != nil {
			t.Fatalf("upload %s: %v", name, err)
		}
		return art
	}
	report := put("report.txt", store.ArtifactOutput, "report")
	log := put("output.log", store.ArtifactLog, "every line the runner printed")
	result := put("result.json", store.ArtifactResult, `{"big":true}`)
	marker, err := json.Marshal(job.SpilledResult{Spilled: true, ArtifactID: result.ID, Filename: result.Filename})
	if err != nil {
		t.Fatal(err)
	}
	out := "the first 10 KB\n"
	finish(t, f, &store.AttemptFinishParams{AttemptID: a.ID, Status: store.AttemptSucceeded, TaskStatus: store.TaskSucceeded,
		Result: marker, Output: &out})
	endJob(t, f, j.ID, store.JobCompleted, "")
	wantIDs := []string{report.ID, log.ID, result.ID}

	// GET /jobs/{id}/tasks, read as raw JSON: the field names are the
	// contract.
	var raw struct {
		Tasks []map[string]any `json:"tasks"`
	}
	f.member.Get(t, jobPath(j.ID, "/tasks")).JSON(t, http.StatusOK, &raw)
	if len(raw.Tasks) != 1 {
		t.Fatalf("tasks: got %d, want 1", len(raw.Tasks))
	}
	tv := raw.Tasks[0]
	arts, _ := tv["artifacts"].([]any)
	if len(arts) != 3 {
		t.Fatalf("task artifacts: got %v, want 3", tv["artifacts"])
	}
	for i, want := range []*store.Artifact{report, log, result} {
		got, _ := arts[i].(map[string]any)
		wantKeys(t, "task artifact", got, "id", "filename", "size", "sha256", "kind")
		if got["id"] != want.ID || got["filename"] != want.Filename || got["size"] != float64(want.SizeBytes) ||
			got["sha256"] != want.SHA256 || got["kind"] != string(want.Kind) {
			t.Errorf("task artifact %d: got %v, want %s %s %d %s %s", i, got, want.ID, want.Filename, want.SizeBytes, want.SHA256, want.Kind)
		}
	}
	if tv["output_artifact_id"] != log.ID || tv["result_spilled"] != true || tv["result_artifact_id"] != result.ID ||
		tv["result_filename"] != "result.json" {
		t.Errorf("task view: output_artifact_id %v result_spilled %v result_artifact_id %v result_filename %v; want %s, true, %s, result.json",
			tv["output_artifact_id"], tv["result_spilled"], tv["result_artifact_id"], tv["result_filename"], log.ID, result.ID)
	}
	if res, _ := tv["result"].(map[string]any); res["result_spilled"] != true || res["result_artifact_id"] != result.ID {
		t.Errorf("task result: got %v, want the spilled-result marker", tv["result"])
	}

	// GET /results/{job_id}: the job's and the task's artifact ids, and
	// the spilled result's.
	var jr apiv1.JobResult
	f.member.Get(t, "/api/v1/results/"+j.ID).JSON(t, http.StatusOK, &jr)
	if !slices.Equal(jr.ArtifactIDs, wantIDs) || len(jr.Results) != 1 || !slices.Equal(jr.Results[0].ArtifactIDs, wantIDs) ||
		jr.Results[0].ResultArtifactID == nil || *jr.Results[0].ResultArtifactID != result.ID {
		t.Errorf("result: got artifact_ids %v, results %+v; want %v and result_artifact_id %s", jr.ArtifactIDs, jr.Results, wantIDs, result.ID)
	}
	// GET /results?include_tasks=true carries the same per task.
	var list struct {
		Results []apiv1.ResultListEntry `json:"results"`
	}
	f.member.Get(t, "/api/v1/results?include_tasks=true").JSON(t, http.StatusOK, &list)
	found := false
	for _, e := range list.Results {
		if e.JobID != j.ID {
			continue
		}
		found = true
		if e.Results == nil || len(*e.Results) != 1 || !slices.Equal((*e.Results)[0].ArtifactIDs, wantIDs) ||
			(*e.Results)[0].ResultArtifactID == nil || *(*e.Results)[0].ResultArtifactID != result.ID {
			t.Errorf("result list entry: got %+v, want artifact_ids %v and result_artifact_id %s", e.Results, wantIDs, result.ID)
		}
	}
	if !found {
		t.Errorf("result list: job %s missing", j.ID)
	}

	// The job stream's snapshot shows the task as GET /tasks does.
	s := openSSE(t, f.e.URL, f.acct.Member, streamPath(j.ID), "")
	snap, _ := snapshotOf(t, s)
	if len(snap.Tasks) != 1 || len(snap.Tasks[0].Artifacts) != 3 || snap.Tasks[0].OutputArtifactID == nil ||
		*snap.Tasks[0].OutputArtifactID != log.ID || !snap.Tasks[0].ResultSpilled {
		t.Errorf("stream snapshot tasks: got %+v, want the 3 artifacts, the output log and the spilled result", snap.Tasks)
	}
}
