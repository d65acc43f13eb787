package fleet_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/job"
	"github.com/skiffhq/skiff/internal/jobview"
	"github.com/skiffhq/skiff/internal/sandbox/sandboxtest"
	"github.com/skiffhq/skiff/internal/store"
)

// withArtifacts adds _artifacts to a runner payload.
func withArtifacts(t *testing.T, p sandboxtest.Payload, arts map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.Encode(t), &m); err != nil {
		t.Fatal(err)
	}
	m["_artifacts"] = arts
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) upload(t *testing.T, data []byte, name string) *store.Artifact {
	t.Helper()
	a, err := h.arts.Upload(context.Background(), &artifact.UploadParams{AccountID: h.accountID, Filename: name,
		Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (h *harness) read(t *testing.T, a *store.Artifact) []byte {
	t.Helper()
	rc, err := h.arts.Open(context.Background(), a, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexsum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// An input is placed read-only in the sandbox, named in local_paths and
// SKIFF_ARTIFACT_<NAME>; the artifact directory's files, a result too large
// to keep inline and the full output come back as the job's artifacts.
func TestArtifactInputsAndOutputs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.host(1)
	dataset := []byte("id,value\n1,2\n")
	in := h.upload(t, dataset, "data set.csv")
	const inPath = "/run/skiff/payload/inputs/data set.csv"
	longOut := strings.Repeat("line of output\n", 2000) // 30 KB, past the 10 KB window
	p := withArtifacts(t, sandboxtest.Payload{
		Stdout: longOut, Env: []string{"SKIFF_ARTIFACT_DATA_SET_CSV"},
		ReadFile: []string{inPath}, WriteFile: []string{inPath, "/run/skiff/payload/inputs/new"},
		Artifacts: map[string]string{"out/report.txt": "report", "model.bin": "weights"},
		ResultPad: 300 << 10, // over the 256 KiB inline limit: spilled
	}, map[string]any{"download": []any{map[string]any{"id": in.ID}}, "upload": []string{"out/report.txt"}})
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: p}), 2*time.Minute)
	if j.Status != store.JobCompleted {
		tasks, _ := h.tasks(j)
		t.Fatalf("job %s: got %s (%s), want completed", j.ID, j.Status, tasks[0].ErrorText)
	}
	tasks, _ := h.tasks(j)
	var spilled struct {
		Spilled    bool   `json:"result_spilled"`
		ArtifactID string `json:"result_artifact_id"`
		Filename   string `json:"result_filename"`
	}
	if err := json.Unmarshal(tasks[0].Result, &spilled); err != nil || !spilled.Spilled || spilled.Filename != "result.json" {
		t.Fatalf("task result: got %.200s, want the spilled-result marker", tasks[0].Result)
	}
	arts, err := h.st.ArtifactListByJob(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[store.ArtifactKind][]*store.Artifact{}
	for _, a := range arts {
		if a.TaskID != tasks[0].ID || a.AccountID != h.accountID {
			t.Errorf("artifact %s: task %s account %s, want the task's and the job's account", a.ID, a.TaskID, a.AccountID)
		}
		byKind[a.Kind] = append(byKind[a.Kind], a)
	}
	outputs := map[string]string{}
	for _, a := range byKind[store.ArtifactOutput] {
		outputs[a.Filename] = string(h.read(t, a))
	}
	if len(outputs) != 2 || outputs["report.txt"] != "report" || outputs["model.bin"] != "weights" {
		t.Errorf("outputs: got %v, want report.txt and model.bin with their contents", outputs)
	}
	if len(byKind[store.ArtifactResult]) != 1 || byKind[store.ArtifactResult][0].ID != spilled.ArtifactID {
		t.Fatalf("result artifacts: got %d, want the spilled %s", len(byKind[store.ArtifactResult]), spilled.ArtifactID)
	}
	rep := sandboxtest.DecodeReport(t, h.read(t, byKind[store.ArtifactResult][0]))
	if got := rep.Env["SKIFF_ARTIFACT_DATA_SET_CSV"]; got != inPath {
		t.Errorf("SKIFF_ARTIFACT_DATA_SET_CSV: got %q, want %q", got, inPath)
	}
	if got := rep.Reads[inPath]; got != string(dataset) {
		t.Errorf("read input: got %q, want %q", got, dataset)
	}
	for _, w := range []string{inPath, "/run/skiff/payload/inputs/new"} {
		if rep.WriteErrors[w] == "" {
			t.Errorf("write %s: succeeded, want a read-only error", w)
		}
	}
	var seen struct {
		Artifacts struct {
			LocalPaths []string `json:"local_paths"`
		} `json:"_artifacts"`
	}
	if err := json.Unmarshal(rep.Payload, &seen); err != nil || len(seen.Artifacts.LocalPaths) != 1 || seen.Artifacts.LocalPaths[0] != inPath {
		t.Errorf("payload the runner saw: got local_paths %v, want [%s]", seen.Artifacts.LocalPaths, inPath)
	}
	logs := byKind[store.ArtifactLog]
	if len(logs) != 1 || string(h.read(t, logs[0])) != longOut {
		t.Errorf("full output: got %d log artifacts, want one holding all %d bytes of stdout", len(logs), len(longOut))
	}
	if len(tasks[0].Output) >= len(longOut) {
		t.Errorf("task output: got %d bytes, want the 10 KB window", len(tasks[0].Output))
	}
	// The task view lists them (what GET /jobs/{id}/tasks shows).
	v := jobview.TaskView(tasks[0], nil, time.Now())
	jobview.WithArtifacts(&v, arts)
	if len(v.Artifacts) != 4 || v.OutputArtifactID == nil || *v.OutputArtifactID != logs[0].ID || !v.ResultSpilled ||
		v.ResultArtifactID == nil || *v.ResultArtifactID != spilled.ArtifactID || v.ResultFilename == nil || *v.ResultFilename != "result.json" {
		t.Errorf("task view: got artifacts %+v output %v spilled %v, want 4 artifacts, the log and the spilled result", v.Artifacts, v.OutputArtifactID, v.ResultSpilled)
	}
	// The input was referenced by the job, which is over: deletable.
	if err := h.st.ArtifactHide(context.Background(), h.accountID, in.ID, time.Now()); err != nil {
		t.Errorf("delete the input after the job: %v", err)
	}
}

// Declared uploads that are absolute, escape or are symlinks fail the task
// with a clear error, and nothing is uploaded.
func TestArtifactDeclaredUploadsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.host(1)
	p := withArtifacts(t, sandboxtest.Payload{
		Artifacts: map[string]string{"ok.txt": "fine"},
		Symlinks:  map[string]string{"link": "/etc/passwd"},
	}, map[string]any{"upload": []string{"ok.txt", "/etc/passwd", "../escape", "link", "missing.txt"}})
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: p}), 2*time.Minute)
	if j.Status != store.JobFailed {
		t.Fatalf("job: got %s, want failed", j.Status)
	}
	tasks, _ := h.tasks(j)
	for _, want := range []string{"declared artifact uploads refused", `"/etc/passwd": absolute`, `"../escape": escapes`,
		`"link": not a regular file`, `"missing.txt": no regular file`} {
		if !strings.Contains(tasks[0].ErrorText, want) {
			t.Errorf("task error %q: want it to say %q", tasks[0].ErrorText, want)
		}
	}
	if arts, _ := h.st.ArtifactListByJob(context.Background(), j.ID); len(arts) != 0 {
		t.Errorf("artifacts: got %d, want none uploaded", len(arts))
	}
}

// A failed attempt's files are kept, marked failed_output.
func TestArtifactFailedAttemptOutputs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.host(1)
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: payload(t, sandboxtest.Payload{
		Artifacts: map[string]string{"partial.txt": "half"}, Exit: 3})}), 2*time.Minute)
	if j.Status != store.JobFailed {
		t.Fatalf("job: got %s, want failed", j.Status)
	}
	arts, err := h.st.ArtifactListByJob(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 1 || arts[0].Kind != store.ArtifactFailedOutput || arts[0].Filename != "partial.txt" ||
		arts[0].SHA256 != hexsum([]byte("half")) {
		t.Fatalf("artifacts: got %+v, want partial.txt as failed_output", arts)
	}
}

// A fan-out over one input fetches it once per host.
func TestArtifactInputCachedPerHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	hostID, _ := h.host(2)
	in := h.upload(t, bytes.Repeat([]byte("d"), 1<<20), "big.bin")
	var items []json.RawMessage
	for range 6 {
		items = append(items, withArtifacts(t, sandboxtest.Payload{ReadFile: []string{"/run/skiff/payload/inputs/big.bin"}},
			map[string]any{"download": in.ID}))
	}
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: json.RawMessage(`{}`), FanOut: &apiv1.JobFanOut{Items: items}}), 3*time.Minute)
	if j.Status != store.JobCompleted {
		t.Fatalf("job: got %s, want completed", j.Status)
	}
	h.agentsMu.Lock()
	a := h.agents[hostID]
	h.agentsMu.Unlock()
	if got := a.InputFetches(); got != 1 {
		t.Errorf("input fetches: got %d for 6 tasks, want 1", got)
	}
}

// An external input is downloaded through the controller and verified
// against its sha256 before the runner starts; a mismatch never runs it.
func TestArtifactExternalInput(t *testing.T) {
	t.Parallel()
	body := []byte("remote dataset")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	t.Cleanup(srv.Close)
	h := newHarness(t, harnessOptions{allowPrivate: true})
	h.host(1)
	run := func(sha string) (*store.Job, *store.Task) {
		a, err := h.arts.RegisterExternal(context.Background(), &artifact.ExternalParams{AccountID: h.accountID,
			Filename: "remote.txt", URL: srv.URL + "/remote.txt", SHA256: sha})
		if err != nil {
			t.Fatal(err)
		}
		j := h.wait(h.submit(apiv1.JobSubmit{Payload: withArtifacts(t, sandboxtest.Payload{
			ReadFile: []string{"/run/skiff/payload/inputs/remote.txt"}}, map[string]any{"download": a.ID})}), 2*time.Minute)
		tasks, _ := h.tasks(j)
		return j, tasks[0]
	}
	j, task := run(hexsum(body))
	if j.Status != store.JobCompleted {
		t.Fatalf("job with a verified external input: got %s (%s), want completed", j.Status, task.ErrorText)
	}
	if got := sandboxtest.DecodeReport(t, task.Result).Reads["/run/skiff/payload/inputs/remote.txt"]; got != string(body) {
		t.Errorf("runner read %q, want %q", got, body)
	}
	j, task = run(hexsum([]byte("other content")))
	if j.Status != store.JobFailed || !strings.Contains(task.ErrorText, "fetched content has sha256 "+hexsum(body)) {
		t.Errorf("job with a mismatching sha256: got %s (%s), want failed naming the digest", j.Status, task.ErrorText)
	}
	// The same bytes would fail on any host: one attempt, no requeue.
	var failure job.FailurePayload
	if err := json.Unmarshal(task.Result, &failure); err != nil || failure.FailureKind != job.FailureArtifact {
		t.Errorf("failure payload %s: want failure_kind %s", task.Result, job.FailureArtifact)
	}
	if task.Attempts != 1 || task.InfraRequeues != 0 || task.RetriesUsed != 0 {
		t.Errorf("task: %d attempts, %d infra requeues, %d retries; want 1, 0, 0", task.Attempts, task.InfraRequeues, task.RetriesUsed)
	}
	if task.Result != nil && strings.Contains(string(task.Result), "remote dataset") {
		t.Error("the runner ran with unverified content")
	}
}

// The dialer refuses a private address at fetch time too (a name that
// resolved elsewhere when registered), unless the operator allows it.
func TestArtifactExternalRefusedAtFetch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret")) }))
	t.Cleanup(srv.Close)
	h := newHarness(t, harnessOptions{})
	h.host(1)
	a, err := h.st.ArtifactCreate(context.Background(), &store.ArtifactCreateParams{ID: "art_rebound", AccountID: h.accountID,
		Filename: "x", Source: store.ArtifactExternal, URL: srv.URL + "/x", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	j := h.wait(h.submit(apiv1.JobSubmit{Payload: withArtifacts(t, sandboxtest.Payload{}, map[string]any{"download": a.ID})}), 2*time.Minute)
	tasks, _ := h.tasks(j)
	if j.Status != store.JobFailed || !strings.Contains(tasks[0].ErrorText, "input "+a.ID) {
		t.Errorf("job: got %s (%s), want failed on fetching the input", j.Status, tasks[0].ErrorText)
	}
}

// A checkpoint kept as an artifact: the failed attempt's artifact_path is
// uploaded and published on the task's checkpoint, and the resumed retry
// reads that file from its inputs (real agent, real sandbox).
func TestArtifactCheckpointResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	h.host(1)
	const inPath = "/run/skiff/payload/inputs/step-7.ckpt"
	j := h.wait(h.submit(apiv1.JobSubmit{MaxRetries: ptr[int64](1),
		Checkpointing: &apiv1.JobCheckpointing{Enabled: ptr(true), ResumeFromLatest: ptr(true)},
		Payload: payload(t, sandboxtest.Payload{Progress: []string{`{"checkpoint":{"step":7,"artifact_path":"ckpt/step-7.ckpt"}}`},
			Artifacts: map[string]string{"ckpt/step-7.ckpt": "weights@7"}, ReadFile: []string{inPath}, ExitUnlessResumed: 1})}), 2*time.Minute)
	tasks, atts := h.tasks(j)
	if j.Status != store.JobCompleted || len(atts) != 2 {
		t.Fatalf("job %s after %d attempts (%s), want completed on the resumed retry", j.Status, len(atts), tasks[0].ErrorText)
	}
	var cp struct {
		Step          int    `json:"step"`
		ArtifactID    string `json:"artifact_id"`
		Source        string `json:"artifact_source"`
		PublishStatus string `json:"publish_status"`
		PublishedAt   string `json:"published_at"`
	}
	if err := json.Unmarshal(tasks[0].Checkpoint, &cp); err != nil || cp.PublishStatus != "published" || cp.Source != "local" || cp.PublishedAt == "" {
		t.Fatalf("checkpoint: got %s, want published", tasks[0].Checkpoint)
	}
	// The retry checkpoints again: the task's checkpoint is its upload.
	a, err := h.st.ArtifactGetByID(context.Background(), cp.ArtifactID)
	if err != nil || a.Kind != store.ArtifactOutput || a.TaskID != tasks[0].ID || string(h.read(t, a)) != "weights@7" {
		t.Fatalf("checkpoint artifact %s: got %+v, %v; want the retry's upload of the file", cp.ArtifactID, a, err)
	}
	r := sandboxtest.DecodeReport(t, tasks[0].Result)
	if got := r.Reads[inPath]; got != "weights@7" {
		t.Errorf("resumed runner read %q from %s, want the checkpoint file", got, inPath)
	}
	var p struct {
		Resume struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"_resume"`
		Artifacts struct {
			LocalPaths []string `json:"local_paths"`
		} `json:"_artifacts"`
	}
	if err := json.Unmarshal(r.Payload, &p); err != nil || len(p.Artifacts.LocalPaths) != 1 || p.Artifacts.LocalPaths[0] != inPath {
		t.Fatalf("resumed payload: got %s, want _resume and local_paths [%s]", r.Payload, inPath)
	}
	// What it resumed from: the failed attempt's upload.
	first, err := h.st.ArtifactGetByID(context.Background(), p.Resume.ArtifactID)
	if err != nil || first.Kind != store.ArtifactFailedOutput || first.TaskID != tasks[0].ID || first.ID == cp.ArtifactID {
		t.Errorf("_resume.artifact_id %s: got %+v, %v; want the failed attempt's upload", p.Resume.ArtifactID, first, err)
	}
}
